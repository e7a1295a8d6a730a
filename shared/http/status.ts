/**
 * metav1.Status ({@link Status}, shared/api) as HTTP responses: of the aggregated API, and of a
 * CloudEvent delivery.
 * @module
 */
import type { Status } from '../api/index.js';
import { accepted, badRequest, noContent, retryLater } from './responses.js';

/** A Status as an HTTP response with its code. */
export function statusResponse(s: Status): Response {
  return Response.json(s, { status: s.code });
}

/** A document of an aggregated API (200), or a Status with its code. */
export function apiResponse(doc: { readonly kind: string }): Response {
  return doc.kind === 'Status' ? statusResponse(doc as Status) : Response.json(doc);
}

/**
 * A Status as the answer to a CloudEvent: carried out → 202; the pool already gone → 204 (not a dead
 * letter); a lost race or a transient failure → 503 (redelivered); a refusal → 400 (redelivery
 * would not make it better).
 */
export function eventReply(s: Status): Response {
  if (s.code === 201) return accepted();
  if (s.code === 404) return noContent();
  if (s.code === 409 || s.code >= 500) return retryLater(s.message);
  return badRequest(s.message);
}
