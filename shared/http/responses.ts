/**
 * The response contract of an event sink: empty 2xx on success, JSON `{error}` on failure, never a
 * CloudEvent (a reply event would re-enter the broker and hit every trigger, ours included).
 * @module
 */

/** A JSON `{error}` reply with any status. */
export function errorResponse(
  status: number,
  message: string,
  headers?: Readonly<Record<string, string>>,
): Response {
  return Response.json(
    { error: message },
    { status, ...(headers === undefined ? {} : { headers }) },
  );
}

/** 202 with an empty body: the event was handled (or there was nothing to do). */
export function accepted(): Response {
  return new Response(null, { status: 202 });
}

/** 204 with an empty body: e.g. the pool is already gone (404 would be redelivered). */
export function noContent(): Response {
  return new Response(null, { status: 204 });
}

/** 400: malformed input; never retried, goes to the dead-letter sink. */
export function badRequest(message: string): Response {
  return errorResponse(400, message);
}

/** 409: lost a race (stale resourceVersion); the broker redelivers. */
export function conflict(message: string): Response {
  return errorResponse(409, message);
}

/**
 * 503 with Retry-After: a transient failure. 503 (not 500) because a direct ApiServerSource sink
 * retries 503 but drops 500.
 */
export function retryLater(message: string, retryAfterSeconds = 1): Response {
  return errorResponse(503, message, {
    'Retry-After': String(Math.max(0, Math.ceil(retryAfterSeconds))),
  });
}
