/**
 * scale-down-with as a CloudEvent, for event-driven autoscalers: served on a port of its own (never
 * the aggregated API's), and authorized as the event's sender, not as the Broker that delivers it.
 *
 * Why the sender carries its own token: Knative Eventing's OIDC authenticates each hop, not the
 * event. The Broker checks the sender's token against its EventPolicies and then delivers with the
 * Trigger's own token; the sender's identity does not travel on. Authorizing that delivery token
 * alone would give every sender the Broker admits the union of the namespaces the Trigger may act
 * in: tenant A could remove tenant B's VMs by name. So two tokens are checked, each with a
 * TokenReview (whose is it, for which audience) and a SubjectAccessReview (`create`
 * `virtualmachinepools/scaledownwith` on the pool):
 * 1. the delivery's (`Authorization: Bearer`, audience `EVENTS_AUDIENCE`): it came through the
 *    Broker, and the admin opted the pool's namespace in for events (a RoleBinding of the Trigger's
 *    identity there);
 * 2. the sender's, carried in the event's extension {@link SENDER_TOKEN_EXTENSION} (a
 *    ServiceAccount token issued for `EVENTS_SENDER_AUDIENCE`, which the Broker passes on like any
 *    extension): the sender itself may scale this pool down. Only the namespace's own grants count.
 * The audiences differ so that neither token can stand in for the other. The request key that makes
 * a redelivery idempotent is the sender's name with the event's `source` and `id`: a sender cannot
 * pre-empt another's events by choosing the same ids.
 * @module
 */
import type { Hono } from 'hono';
import {
  SCALE_DOWN_WITH_EVENT,
  SUBRESOURCES_GROUP,
  ScaleDownWithEvent,
  parseWith,
} from '../../shared/api/index.js';
import { invalidObjectKey, requestKey } from '../../shared/domain/index.js';
import type { AppDeps, NodeEnv } from '../../shared/http/index.js';
import {
  auditFields,
  badRequest,
  buildFunctionApp,
  cloudEventHandler,
  createEventAccessCheck,
  createTokenCheck,
  errorResponse,
  eventReply,
  resolveDeps,
} from '../../shared/http/index.js';
import { withCallBudget } from '../../shared/kube/index.js';
import { scaleDownWith } from '../../shared/reconcile/index.js';

/** Dependencies of the CloudEvent app. */
export interface ScaleDownEventsDeps extends AppDeps {
  /** The audience the delivery's token must be issued for (`EVENTS_AUDIENCE`). */
  readonly audience: string;
  /** The audience the sender's own token must be issued for (`EVENTS_SENDER_AUDIENCE`). */
  readonly senderAudience?: string;
}

/** The audience knative/ configures: Knative's `<group>/<kind>/<namespace>/<name>` of the function. */
export const DEFAULT_EVENTS_AUDIENCE = 'apps/deployment/vmpool-system/scale-down-with';

/** The audience of a sender's own token, unless `EVENTS_SENDER_AUDIENCE` names another. */
export const DEFAULT_SENDER_AUDIENCE = 'scaledownwith.vmpool.virtualization.deckhouse.io';

/**
 * The CloudEvent extension attribute (binary mode: the `ce-vmpooltoken` header) that carries the
 * sender's own ServiceAccount token.
 */
export const SENDER_TOKEN_EXTENSION = 'vmpooltoken';

/** The CloudEvent app: `POST /` takes one scaledownwith event from an authenticated sender. */
export function buildScaleDownEventsApp(input: ScaleDownEventsDeps): Hono<NodeEnv> {
  const { kube, log, metrics, health } = resolveDeps(input);
  const senderAudience = input.senderAudience ?? DEFAULT_SENDER_AUDIENCE;
  // One audience for both would let a delivery token pass as a sender's and back: a setup error.
  if (senderAudience === input.audience)
    throw new Error(`the sender's audience must differ from the delivery's ("${input.audience}")`);
  const app = buildFunctionApp({ name: 'scale-down-with-events', log, metrics, health });
  const group = SUBRESOURCES_GROUP;
  const checkDelivery = createEventAccessCheck({ kube, group, audience: input.audience });
  const checkSender = createTokenCheck({
    kube,
    group,
    audience: senderAudience,
    whose: "the sender's",
    where: `the CloudEvent extension ${SENDER_TOKEN_EXTENSION}`,
  });
  app.post(
    '/',
    cloudEventHandler(log, async function onEvent(event, { log, c }) {
      if (event.type !== SCALE_DOWN_WITH_EVENT)
        return badRequest(`expected a ${SCALE_DOWN_WITH_EVENT} event, got ${event.type}`);
      const data = parseWith(ScaleDownWithEvent, event.data);
      if (!data.ok) return badRequest(`invalid ${SCALE_DOWN_WITH_EVENT} data: ${data.message}`);
      const { namespace, pool, targets, dryRun } = data.data;
      const bad = invalidObjectKey(namespace, pool);
      if (bad !== undefined) return badRequest(bad);
      const audit = { pool: `${namespace}/${pool}`, source: event.source };
      const access = { verb: 'create', namespace, name: pool, subresource: 'scaledownwith' };
      const delivered = await checkDelivery(c, access);
      const via = c.get('caller')?.user;
      const token = event.extensions[SENDER_TOKEN_EXTENSION];
      const refused =
        delivered ?? (await checkSender(c, typeof token === 'string' ? token : undefined, access));
      // After the delivery's check the caller on record is the delivery's identity; the sender's
      // replaces it once checked, so an audit line names the sender whenever it got that far.
      const who = { ...auditFields(c), ...(via === undefined ? {} : { via }) };
      if (refused !== undefined) {
        const { code, message } = refused;
        log.info({ ...audit, ...who, code, message }, 'scaledownwith event refused');
        return errorResponse(code, message);
      }
      const sender = c.get('caller')?.user ?? '';
      // A broker redelivers with the same source and id: the key makes the retry idempotent, for
      // this sender only.
      const request = requestKey(sender, event.source, event.id);
      const body = { targets, ...(dryRun ? { dryRun } : {}) };
      const result = await withCallBudget({ signal: c.req.raw.signal }, () =>
        scaleDownWith(kube, namespace, pool, body, { request }),
      );
      metrics.reconciles.inc({ function: 'scale-down-with', outcome: String(result.code) });
      const { code, message } = result;
      log.info({ ...audit, ...who, code, message }, 'scaledownwith event');
      return eventReply(result);
    }),
  );
  return app;
}
