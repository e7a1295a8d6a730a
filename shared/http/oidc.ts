/**
 * Who delivered or sent a CloudEvent, from a service-account token: Knative Eventing's OIDC identity
 * of the delivery (the `authentication-oidc` feature: the Trigger's token, issued for the receiver's
 * audience, as a bearer token), or a token the sender carries in the event itself. The API server
 * says whose it is (TokenReview), and that identity's right is a SubjectAccessReview, as for a user
 * of the aggregated API.
 * @module
 */
import type { Context } from 'hono';
import type { Kube } from '../kube/index.js';
import type { AccessCheck, AccessRequest } from './access.js';
import { authorize } from './access.js';
import type { NodeEnv } from './env.js';
import { statusFailure } from '../api/index.js';
import type { Status } from '../api/index.js';

/** Settings of {@link createEventAccessCheck}. */
export interface EventAccessOptions {
  readonly kube: Kube;
  /** The API group the requests are authorized in. */
  readonly group: string;
  /** The audience the token must be issued for (this function's, as its caller knows it). */
  readonly audience: string;
}

/** The token of `Authorization: Bearer <token>`, if the header has that form. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * Authenticates and authorizes one bearer token: resolves to the refusal, or undefined when the
 * token's identity may do the request (that identity is then `c.get('caller')`).
 */
export type TokenCheck = (
  c: Context<NodeEnv>,
  token: string | undefined,
  req: AccessRequest,
) => Promise<Status | undefined>;

/** Settings of {@link createTokenCheck}. */
export interface TokenCheckOptions extends EventAccessOptions {
  /** Whose token this is, in refusals ("the sender's", "the delivery's"). */
  readonly whose: string;
  /** Where the token is expected, in the refusal of a request without one. */
  readonly where: string;
}

/**
 * The check of one token: 401 without a token valid for the audience, 503 when the API server
 * cannot say, 403 when its identity may not do the request. Never answers from the token's own
 * claims: only the API server's TokenReview decides whose it is.
 */
export function createTokenCheck(opts: TokenCheckOptions): TokenCheck {
  const { kube, group, audience, whose, where } = opts;
  return async function checkToken(c, token, req) {
    if (token === undefined || token === '')
      return statusFailure(401, `${whose} token is required (${where})`);
    const review = await kube.tokenReview(token, [audience]);
    if (!review.ok) return statusFailure(503, `cannot verify ${whose} token: ${review.message}`);
    const { authenticated, audiences, user } = review.value;
    if (!authenticated || user === undefined || !audiences.includes(audience))
      return statusFailure(401, `${whose} token is not valid for audience "${audience}"`);
    const caller = {
      user: user.username,
      ...(user.uid === undefined ? {} : { uid: user.uid }),
      groups: [...user.groups],
      extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])),
    };
    return authorize(c, kube, group, caller, req);
  };
}

/**
 * An access check of a CloudEvent's delivery: the `Authorization: Bearer` token Knative Eventing
 * presents (a Trigger's OIDC identity, not the event's sender: see functions/scale-down-with/events.ts).
 */
export function createEventAccessCheck(opts: EventAccessOptions): AccessCheck {
  const check = createTokenCheck({
    ...opts,
    whose: "the delivery's OIDC",
    where: 'Authorization: Bearer',
  });
  return (c, req) => check(c, bearerToken(c.req.header('authorization')), req);
}
