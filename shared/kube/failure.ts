/**
 * Turning whatever client-node throws into a {@link Failure} value.
 * @module
 */
import { AbortError, ApiException, FetchError } from '@kubernetes/client-node';
import type { Failure, FailureReason } from './types.js';

/** `code` of failures that did not come from an HTTP status (network, timeout, bad response). */
export const NO_HTTP_STATUS = 0;

/** A Failure built from parts. */
export function failure(reason: FailureReason, code: number, message: string): Failure {
  return { ok: false, reason, code, message };
}

interface StatusBody {
  reason?: string;
  message?: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The metav1.Status in an ApiException body: a raw string for custom objects, parsed for typed APIs. */
function statusBody(body: unknown): StatusBody {
  let value: unknown = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return { message: body.slice(0, 500) };
    }
  }
  if (!isRecord(value)) return {};
  const out: StatusBody = {};
  if (typeof value.reason === 'string') out.reason = value.reason;
  if (typeof value.message === 'string') out.message = value.message;
  return out;
}

/** Maps an HTTP status (and the Status reason) to the reason callers branch on. */
export function reasonOf(code: number, statusReason?: string): FailureReason {
  if (code === 404) return 'notFound';
  if (code === 409) return statusReason === 'AlreadyExists' ? 'alreadyExists' : 'conflict';
  if (code === 401 || code === 403) return 'forbidden';
  // 410 is an expired list continue token: a fresh attempt later succeeds.
  if (code === 408 || code === 410 || code === 429 || code >= 500) return 'transient';
  // 400, 422 and the other 4xx (405, 413, 415) will not change by retrying.
  if (code >= 400) return 'invalid';
  return 'transient';
}

const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

function isNetworkError(err: unknown): boolean {
  if (err instanceof FetchError || err instanceof AbortError) return true;
  if (!(err instanceof Error)) return false;
  if (err.name === 'AbortError' || err.name === 'TimeoutError') return true;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && NETWORK_CODES.has(code);
}

/** Seconds to wait from a Retry-After header (delta-seconds or HTTP date), if any. */
export function retryAfterMs(
  headers: Readonly<Record<string, string>> | undefined,
): number | undefined {
  const raw = headers?.['retry-after'] ?? headers?.['Retry-After'];
  if (raw === undefined || raw === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** A Failure plus the server's Retry-After hint, which only the retry loop needs. */
export interface ClassifiedFailure {
  readonly failure: Failure;
  readonly retryAfterMs?: number;
}

/**
 * Classifies a thrown error. Unknown errors are rethrown: they are bugs (a malformed kubeconfig, a
 * programming error), and turning them into `transient` would make the broker redeliver forever.
 */
export function classify(err: unknown): ClassifiedFailure {
  if (err instanceof ApiException) {
    const e = err as ApiException<unknown>;
    const status = statusBody(e.body);
    const reason = reasonOf(e.code, status.reason);
    const message = status.message ?? `HTTP ${e.code}`;
    const after = reasonOf(e.code) === 'transient' ? retryAfterMs(e.headers) : undefined;
    return after === undefined
      ? { failure: failure(reason, e.code, message) }
      : { failure: failure(reason, e.code, message), retryAfterMs: after };
  }
  if (isNetworkError(err)) {
    const message = err instanceof Error ? err.message : 'network error';
    return { failure: failure('transient', NO_HTTP_STATUS, message) };
  }
  throw err;
}
