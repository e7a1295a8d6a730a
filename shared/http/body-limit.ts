/**
 * A request body cap for every function.
 * @module
 */
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { errorResponse } from './responses.js';

/** Default cap: 1 MiB, far above any pool, AdmissionReview or event vmpool handles. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * Refuses bodies over `maxBytes` with 413 JSON `{error}`, chunked requests included (hono ≥ 4.12.16
 * counts the stream, not only Content-Length).
 */
export function limitBody(maxBytes: number = DEFAULT_MAX_BODY_BYTES): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => errorResponse(413, `request body exceeds ${maxBytes} bytes`),
  });
}
