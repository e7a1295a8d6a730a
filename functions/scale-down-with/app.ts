/**
 * scale-down-with: the aggregated API `POST …/virtualmachinepools/{name}/scaledownwith` that removes
 * named replicas atomically, `GET …/victims?count=N` that previews a scale-down's victims, and the
 * removal as a CloudEvent for event-driven autoscalers.
 * @module
 */
import type { Context, Hono } from 'hono';
import {
  SCALE_DOWN_WITH_EVENT,
  SUBRESOURCES_GROUP,
  ScaleDownWithBody,
  ScaleDownWithEvent,
  VERSION,
  parseWith,
} from '../../shared/api/index.js';
import type { AppDeps, ClientCertificate, NodeEnv } from '../../shared/http/index.js';
import {
  apiResponse,
  badRequest,
  buildFunctionApp,
  clientCertificate,
  cloudEventHandler,
  createAccessCheck,
  eventReply,
  parseBody,
  resolveDeps,
  statusFailure,
  statusResponse,
} from '../../shared/http/index.js';
import { requestKey } from '../../shared/domain/index.js';
import { poolMeta, poolVictims, scaleDownWith } from '../../shared/reconcile/index.js';
import { apiGroup, apiGroupList, resourceList } from './discovery.js';

/** Dependencies; the certificate source is injectable for tests. */
export interface ScaleDownAppDeps extends AppDeps {
  readonly clientCert?: (c: Context<NodeEnv>) => ClientCertificate | undefined;
  /** How long the front-proxy CA read from kube-system is trusted before re-reading (ms). */
  readonly proxyTtlMs?: number;
  /**
   * Accept scaledownwith as a CloudEvent on `POST /`. That path carries no user identity, so it is
   * off unless the deployment restricts who can reach it (env `SCALEDOWNWITH_EVENTS=enabled`).
   */
  readonly acceptEvents?: boolean;
}

const API_VERSION = `${SUBRESOURCES_GROUP}/${VERSION}`;
const BASE = `/apis/${API_VERSION}`;
const POOL = `${BASE}/namespaces/:ns/virtualmachinepools/:name`;
const EXPECTED = 'expected VirtualMachinePoolScaleDownWith {"targets": [...], "dryRun": [...]}';

/** The aggregated API server app. */
export function buildScaleDownApp(input: ScaleDownAppDeps): Hono<NodeEnv> {
  const deps = resolveDeps(input);
  const { kube, log, metrics } = deps;
  const app = buildFunctionApp({ name: 'scale-down-with', log, metrics });
  const checkAccess = createAccessCheck({
    kube,
    now: deps.now,
    group: SUBRESOURCES_GROUP,
    clientCert: input.clientCert ?? clientCertificate,
    ...(input.proxyTtlMs === undefined ? {} : { proxyTtlMs: input.proxyTtlMs }),
  });

  app.get('/apis', (c) => c.json(apiGroupList));
  app.get(`/apis/${SUBRESOURCES_GROUP}`, (c) => c.json(apiGroup));
  app.get(BASE, (c) => c.json(resourceList));

  app.get(POOL, async (c) => {
    const { ns: namespace, name } = c.req.param();
    const refused = await checkAccess(c, { verb: 'get', namespace, name });
    return apiResponse(refused ?? (await poolMeta(kube, namespace, name, API_VERSION)));
  });

  app.get(`${POOL}/victims`, async (c) => {
    const { ns: namespace, name } = c.req.param();
    const refused = await checkAccess(c, { verb: 'get', namespace, name, subresource: 'victims' });
    const count = c.req.query('count');
    return apiResponse(refused ?? (await poolVictims(kube, namespace, name, count, API_VERSION)));
  });

  app.post(`${POOL}/scaledownwith`, async (c) => {
    const { ns: namespace, name } = c.req.param();
    const access = { verb: 'create', namespace, name, subresource: 'scaledownwith' };
    const refused = await checkAccess(c, access);
    if (refused !== undefined) return statusResponse(refused);
    const body = await parseBody(c, ScaleDownWithBody);
    if (!body.ok) return statusResponse(statusFailure(400, `${EXPECTED}: ${body.message}`, name));
    const result = await scaleDownWith(kube, namespace, name, body.data);
    metrics.reconciles.inc({ function: 'scale-down-with', outcome: String(result.code) });
    const { code, message } = result;
    log.info({ pool: `${namespace}/${name}`, code, message }, 'scaledownwith');
    return statusResponse(result);
  });

  if (input.acceptEvents !== true) return app;
  app.post(
    '/',
    cloudEventHandler(log, async function onEvent(event, { log }) {
      if (event.type !== SCALE_DOWN_WITH_EVENT)
        return badRequest(`expected a ${SCALE_DOWN_WITH_EVENT} event, got ${event.type}`);
      const data = parseWith(ScaleDownWithEvent, event.data);
      if (!data.ok) return badRequest(`invalid ${SCALE_DOWN_WITH_EVENT} data: ${data.message}`);
      const { namespace, pool, targets, dryRun } = data.data;
      // A broker redelivers with the same source and id: the key makes the retry idempotent.
      const request = requestKey(event.source, event.id);
      const body = { targets, ...(dryRun ? { dryRun } : {}) };
      const result = await scaleDownWith(kube, namespace, pool, body, { request });
      const { code, message } = result;
      log.info({ pool: `${namespace}/${pool}`, code, message }, 'scaledownwith event');
      return eventReply(result);
    }),
  );
  return app;
}
