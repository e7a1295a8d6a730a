/**
 * A request body cap for every function.
 * @module
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { errorResponse } from './responses.js';

/** Default cap: 1 MiB, far above any pool, AdmissionReview or event vmpool handles. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Refuses bodies over `maxBytes` with 413 (JSON `{error}` unless `respond` says otherwise), chunked
 * requests included (hono ≥ 4.12.16 counts the stream, not only Content-Length).
 */
export function limitBody(
  maxBytes: number = DEFAULT_MAX_BODY_BYTES,
  respond: (c: Context, code: number, message: string) => Response = (_c, code, message) =>
    errorResponse(code, message),
): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) => respond(c, 413, `request body exceeds ${String(maxBytes)} bytes`),
  });
}
