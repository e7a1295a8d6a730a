/**
 * scale-down-with as a CloudEvent, for event-driven autoscalers: served on a port of its own (never
 * the aggregated API's) and only to a sender whose Knative Eventing OIDC token the API server
 * vouches for (TokenReview, the function's audience) and who may `create`
 * `virtualmachinepools/scaledownwith` in the pool's namespace (SubjectAccessReview).
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
  errorResponse,
  eventReply,
  resolveDeps,
} from '../../shared/http/index.js';
import { withCallBudget } from '../../shared/kube/index.js';
import { scaleDownWith } from '../../shared/reconcile/index.js';

/** Dependencies of the CloudEvent app. */
export interface ScaleDownEventsDeps extends AppDeps {
  /** The audience a sender's token must be issued for (`EVENTS_AUDIENCE`). */
  readonly audience: string;
}

/** The audience knative/ configures: Knative's `<group>/<kind>/<namespace>/<name>` of the function. */
export const DEFAULT_EVENTS_AUDIENCE = 'apps/deployment/vmpool-system/scale-down-with';

/** The CloudEvent app: `POST /` takes one scaledownwith event from an authenticated sender. */
export function buildScaleDownEventsApp(input: ScaleDownEventsDeps): Hono<NodeEnv> {
  const { kube, log, metrics, health } = resolveDeps(input);
  const app = buildFunctionApp({ name: 'scale-down-with-events', log, metrics, health });
  const checkSender = createEventAccessCheck({
    kube,
    group: SUBRESOURCES_GROUP,
    audience: input.audience,
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
      const refused = await checkSender(c, access);
      if (refused !== undefined) {
        const { code, message } = refused;
        log.info({ ...audit, ...auditFields(c), code, message }, 'scaledownwith event refused');
        return errorResponse(code, message);
      }
      // A broker redelivers with the same source and id: the key makes the retry idempotent.
      const request = requestKey(event.source, event.id);
      const body = { targets, ...(dryRun ? { dryRun } : {}) };
      const result = await withCallBudget({ signal: c.req.raw.signal }, () =>
        scaleDownWith(kube, namespace, pool, body, { request }),
      );
      metrics.reconciles.inc({ function: 'scale-down-with', outcome: String(result.code) });
      const { code, message } = result;
      log.info({ ...audit, ...auditFields(c), code, message }, 'scaledownwith event');
      return eventReply(result);
    }),
  );
  return app;
}
