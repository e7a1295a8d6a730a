/**
 * Who sent a CloudEvent: Knative Eventing's sender identity (the `authentication-oidc` feature). A
 * sender presents a service-account token issued for the receiver's audience as a bearer token; the
 * API server says whose it is (TokenReview), and that identity's right is a SubjectAccessReview, as
 * for a user of the aggregated API.
 * @module
 */
import type { Kube } from '../kube/index.js';
import type { AccessCheck } from './access.js';
import { authorize } from './access.js';
import { statusFailure } from './status.js';

/** Settings of {@link createEventAccessCheck}. */
export interface EventAccessOptions {
  readonly kube: Kube;
  /** The API group the requests are authorized in. */
  readonly group: string;
  /** The audience a sender's token must be issued for (this function's, as the sender knows it). */
  readonly audience: string;
}

/** The token of `Authorization: Bearer <token>`, if the header has that form. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * An access check of CloudEvent senders: 401 without a token valid for the audience, 503 when the
 * API server cannot say, 403 when the sender may not do the request. Never answers from the token's
 * own claims: only the API server's TokenReview decides whose it is.
 */
export function createEventAccessCheck(opts: EventAccessOptions): AccessCheck {
  const { kube, group, audience } = opts;
  return async function checkSender(c, req) {
    const token = bearerToken(c.req.header('authorization'));
    if (token === undefined)
      return statusFailure(401, "the sender's OIDC token is required (Authorization: Bearer)");
    const review = await kube.tokenReview(token, [audience]);
    if (!review.ok)
      return statusFailure(503, `cannot verify the sender's token: ${review.message}`);
    const { authenticated, audiences, user } = review.value;
    if (!authenticated || user === undefined || !audiences.includes(audience))
      return statusFailure(401, `the sender's token is not valid for audience "${audience}"`);
    const caller = {
      user: user.username,
      ...(user.uid === undefined ? {} : { uid: user.uid }),
      groups: [...user.groups],
      extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])),
    };
    return authorize(c, kube, group, caller, req);
  };
}
