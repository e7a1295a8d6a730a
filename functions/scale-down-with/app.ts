/**
 * scale-down-with: the aggregated API `POST …/virtualmachinepools/{name}/scaledownwith` that removes
 * named replicas atomically, and the same request as a CloudEvent for event-driven autoscalers.
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
  badRequest,
  buildFunctionApp,
  clientCertificate,
  cloudEventHandler,
  createAccessCheck,
  eventReply,
  parseBody,
  poolNotFound,
  resolveDeps,
  statusFailure,
  statusResponse,
} from '../../shared/http/index.js';
import { requestKey } from '../../shared/domain/index.js';
import { scaleDownWith } from '../../shared/reconcile/index.js';
import { discovery } from './discovery.js';

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
  /**
   * The aggregated group served: routes, discovery, authorization checks (default the reference's
   * `subresources.virtualization.deckhouse.io`; vmpool's own where the platform serves that one; env
   * `SCALEDOWNWITH_GROUP`).
   */
  readonly group?: string;
}

const EXPECTED = 'expected VirtualMachinePoolScaleDownWith {"targets": [...], "dryRun": [...]}';

/** The aggregated API server app. */
export function buildScaleDownApp(input: ScaleDownAppDeps): Hono<NodeEnv> {
  const deps = resolveDeps(input);
  const { kube, log, metrics } = deps;
  const app = buildFunctionApp({ name: 'scale-down-with', log, metrics });
  const group = input.group ?? SUBRESOURCES_GROUP;
  const BASE = `/apis/${group}/${VERSION}`;
  const POOL = `${BASE}/namespaces/:ns/virtualmachinepools/:name` as const;
  const docs = discovery(group);
  const checkAccess = createAccessCheck({
    kube,
    now: deps.now,
    group,
    clientCert: input.clientCert ?? clientCertificate,
    ...(input.proxyTtlMs === undefined ? {} : { proxyTtlMs: input.proxyTtlMs }),
  });

  app.get('/apis', (c) => c.json(docs.apiGroupList));
  app.get(`/apis/${group}`, (c) => c.json(docs.apiGroup));
  app.get(BASE, (c) => c.json(docs.resourceList));

  app.get(POOL, async (c) => {
    const { ns: namespace, name } = c.req.param();
    const refused = await checkAccess(c, { verb: 'get', namespace, name });
    if (refused !== undefined) return statusResponse(refused);
    const got = await kube.getPool(namespace, name);
    if (!got.ok)
      return statusResponse(
        got.reason === 'notFound' ? poolNotFound(name) : statusFailure(500, got.message, name),
      );
    const apiVersion = `${group}/${VERSION}`;
    return c.json({ apiVersion, kind: 'VirtualMachinePool', metadata: got.value.metadata });
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
    // A 5xx is vmpool's own failure (a missing grant, an unreachable API server): an error.
    log[code >= 500 ? 'error' : 'info'](
      { pool: `${namespace}/${name}`, code, message },
      'scaledownwith',
    );
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
