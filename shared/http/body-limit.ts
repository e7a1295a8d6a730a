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
  const message = `request body exceeds ${String(maxBytes)} bytes`;
  const streamed = bodyLimit({ maxSize: maxBytes, onError: (c) => respond(c, 413, message) });
  return async function limitBodyByLength(c, next) {
    // hono's bodyLimit looks at `c.req.raw.body` first, which makes @hono/node-server build a whole
    // web Request (an AbortController, a stream) for every delivery, about a tenth of
    // reconcile-pool's CPU in a scale-up. With a Content-Length and no Transfer-Encoding the header
    // settles it, exactly as bodyLimit would; anything else goes through bodyLimit's stream count.
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      if (Number.parseInt(length, 10) > maxBytes) return respond(c, 413, message);
      await next();
      return;
    }
    return streamed(c, next);
  };
}
