/**
 * Turning an API server's refusal, or a request that never got an answer, into a {@link Failure}.
 * @module
 */
import type { IncomingHttpHeaders } from 'node:http';
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

/** The metav1.Status of an error answer's body (any text: proxies answer in HTML). */
function statusBody(body: string): StatusBody {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return body === '' ? {} : { message: body.slice(0, 500) };
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

/**
 * True for an error of a request that got no answer. System and OpenSSL errors (ECONNRESET,
 * CERT_HAS_EXPIRED, ERR_SSL_…, ERR_TLS_…) and aborts come from the wire; Node's other `ERR_` codes
 * (an invalid header value, say) are programming errors.
 */
function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'AbortError' || err.name === 'TimeoutError') return true;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && (!code.startsWith('ERR_') || /^ERR_(SSL|TLS)_/.test(code));
}

/** Seconds to wait from a Retry-After header (delta-seconds or HTTP date), if any. */
export function retryAfterMs(
  headers: IncomingHttpHeaders | Readonly<Record<string, string>> | undefined,
): number | undefined {
  const raw = headers?.['retry-after'];
  if (typeof raw !== 'string' || raw === '') return undefined;
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

/** The failure of an answer outside 2xx, from its status code and metav1.Status body. */
export function refusal(
  code: number,
  headers: IncomingHttpHeaders,
  body: string,
): ClassifiedFailure {
  const status = statusBody(body);
  const reason = reasonOf(code, status.reason);
  const message = status.message ?? `HTTP ${code}`;
  const after = reason === 'transient' ? retryAfterMs(headers) : undefined;
  return after === undefined
    ? { failure: failure(reason, code, message) }
    : { failure: failure(reason, code, message), retryAfterMs: after };
}

/**
 * Classifies a thrown error: a request that got no answer (network, timeout, abort) is transient.
 * Unknown errors are rethrown: they are bugs (a malformed kubeconfig, a programming error), and
 * turning them into `transient` would make the broker redeliver forever.
 */
export function classify(err: unknown): ClassifiedFailure {
  if (isNetworkError(err)) {
    const message = err instanceof Error ? err.message : 'network error';
    return { failure: failure('transient', NO_HTTP_STATUS, message) };
  }
  throw err;
}
