/**
 * scale-down-with: the aggregated API `POST …/virtualmachinepools/{name}/scaledownwith` that removes
 * named replicas atomically, and the same request as a CloudEvent for event-driven autoscalers.
 * @module
 */
import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { SUBRESOURCES_GROUP, ScaleDownWithBody, VERSION } from '../../shared/api/index.js';
import type { ClientCertificate, NodeEnv } from '../../shared/http/index.js';
import {
  accepted,
  badRequest,
  buildFunctionApp,
  clientCertificate,
  cloudEventHandler,
  createFunctionMetrics,
  noContent,
  retryLater,
} from '../../shared/http/index.js';
import { requestKey } from '../../shared/domain/index.js';
import type { Status } from '../../shared/reconcile/index.js';
import { failure, scaleDownWith } from '../../shared/reconcile/index.js';
import type { FunctionDeps } from '../../shared/runtime/index.js';
import type { FrontProxy } from './auth.js';
import { authenticate, loadFrontProxy } from './auth.js';
import { discovery } from './discovery.js';

/** The CloudEvent type of a scaledownwith request; data is {@link ScaleDownWithEvent}. */
export const SCALE_DOWN_WITH_EVENT = 'io.deckhouse.virtualization.vmpool.scaledownwith';

/** Data of a {@link SCALE_DOWN_WITH_EVENT}. */
export const ScaleDownWithEvent = z.looseObject({
  namespace: z.string().min(1),
  pool: z.string().min(1),
  targets: z.array(z.string()),
  dryRun: z.array(z.string()).optional(),
});

/** Dependencies; the certificate source and clock are injectable for tests. */
export interface ScaleDownAppDeps extends Partial<Pick<FunctionDeps, 'metrics'>> {
  readonly kube: FunctionDeps['kube'];
  readonly log: FunctionDeps['log'];
  readonly clientCert?: (c: Context<NodeEnv>) => ClientCertificate | undefined;
  readonly now?: () => Date;
  /** How long the front-proxy CA read from kube-system is trusted before re-reading (ms). */
  readonly proxyTtlMs?: number;
  /**
   * Accept scaledownwith as a CloudEvent on `POST /`. That path carries no user identity, so it is
   * off unless the deployment restricts who can reach it (env `SCALEDOWNWITH_EVENTS=enabled`).
   */
  readonly acceptEvents?: boolean;
  /**
   * The aggregated group served (default the reference's `subresources.virtualization.deckhouse.io`;
   * vmpool's own where the platform serves that one; env `SCALEDOWNWITH_GROUP`).
   */
  readonly group?: string;
}

function statusResponse(s: Status): Response {
  return Response.json(s, { status: s.code });
}

/** The aggregated API server app. */
export function buildScaleDownApp(deps: ScaleDownAppDeps): Hono<NodeEnv> {
  const metrics = deps.metrics ?? createFunctionMetrics();
  const now = deps.now ?? (() => new Date());
  const certOf = deps.clientCert ?? clientCertificate;
  const app = buildFunctionApp({ name: 'scale-down-with', log: deps.log, metrics });
  const group = deps.group ?? SUBRESOURCES_GROUP;
  const BASE = `/apis/${group}/${VERSION}`;
  const docs = discovery(group);
  let proxy: { value: FrontProxy; at: number } | undefined;

  const frontProxy = async (): Promise<FrontProxy | undefined> => {
    const t = now().getTime();
    if (proxy === undefined || t - proxy.at > (deps.proxyTtlMs ?? 60_000)) {
      const value = await loadFrontProxy(deps.kube);
      if (value !== undefined) proxy = { value, at: t };
    }
    return proxy?.value;
  };

  /** Authenticates and authorizes a caller for `verb` on the pool; a Status when refused. */
  const admit = async (
    c: Context<NodeEnv>,
    verb: string,
    namespace: string,
    name: string,
    subresource?: string,
  ): Promise<Status | undefined> => {
    const fp = await frontProxy();
    if (fp === undefined) return failure(503, 'cannot read the front-proxy CA from kube-system');
    const who = authenticate(certOf(c), c.req.raw.headers, fp, now());
    if (!who.ok) return failure(401, who.message);
    const sar = await deps.kube.subjectAccessReview({
      user: who.caller.user,
      groups: who.caller.groups,
      extra: who.caller.extra,
      namespace,
      group,
      resource: 'virtualmachinepools',
      ...(subresource === undefined ? {} : { subresource }),
      name,
      verb,
    });
    if (!sar.ok) return failure(503, `authorization check failed: ${sar.message}`);
    if (!sar.value.allowed)
      return failure(
        403,
        `virtualmachinepools.${group} "${name}" is forbidden: User "${who.caller.user}" cannot ${verb} resource "virtualmachinepools${subresource === undefined ? '' : `/${subresource}`}" in API group "${group}" in the namespace "${namespace}"`,
        name,
      );
    return undefined;
  };

  app.get('/apis', (c) => c.json(docs.apiGroupList));
  app.get(`/apis/${group}`, (c) => c.json(docs.apiGroup));
  app.get(BASE, (c) => c.json(docs.resourceList));

  app.get(`${BASE}/namespaces/:ns/virtualmachinepools/:name`, async (c) => {
    const { ns, name } = c.req.param();
    const refused = await admit(c, 'get', ns, name);
    if (refused !== undefined) return statusResponse(refused);
    const got = await deps.kube.getPool(ns, name);
    if (!got.ok)
      return statusResponse(
        got.reason === 'notFound'
          ? failure(404, `virtualmachinepools.${group} "${name}" not found`, name)
          : failure(500, got.message, name),
      );
    return c.json({
      apiVersion: `${group}/${VERSION}`,
      kind: 'VirtualMachinePool',
      metadata: got.value.metadata,
    });
  });

  app.post(`${BASE}/namespaces/:ns/virtualmachinepools/:name/scaledownwith`, async (c) => {
    const { ns, name } = c.req.param();
    const refused = await admit(c, 'create', ns, name, 'scaledownwith');
    if (refused !== undefined) return statusResponse(refused);
    let raw: unknown;
    try {
      raw = JSON.parse(await c.req.text());
    } catch {
      return statusResponse(
        failure(400, 'expected VirtualMachinePoolScaleDownWith, got a body that is not JSON', name),
      );
    }
    const body = ScaleDownWithBody.safeParse(raw);
    if (!body.success)
      return statusResponse(
        failure(
          400,
          `expected VirtualMachinePoolScaleDownWith {"targets": [...], "dryRun": [...]}: ${body.error.issues[0]?.message ?? ''}`,
          name,
        ),
      );
    const result = await scaleDownWith(deps.kube, ns, name, body.data);
    metrics.reconciles.inc({ function: 'scale-down-with', outcome: String(result.code) });
    deps.log[result.code >= 500 ? 'error' : 'info'](
      { pool: `${ns}/${name}`, code: result.code, message: result.message },
      'scaledownwith',
    );
    return statusResponse(result);
  });

  if (deps.acceptEvents !== true) return app;
  app.post(
    '/',
    cloudEventHandler(deps.log, async function onEvent(event, { log }) {
      if (event.type !== SCALE_DOWN_WITH_EVENT)
        return badRequest(`expected a ${SCALE_DOWN_WITH_EVENT} event, got ${event.type}`);
      const data = ScaleDownWithEvent.safeParse(event.data);
      if (!data.success)
        return badRequest(
          `invalid ${SCALE_DOWN_WITH_EVENT} data: ${data.error.issues[0]?.message ?? ''}`,
        );
      const { namespace, pool, targets, dryRun } = data.data;
      // A broker redelivers with the same source and id: the key makes the retry idempotent.
      const result = await scaleDownWith(
        deps.kube,
        namespace,
        pool,
        { targets, ...(dryRun ? { dryRun } : {}) },
        { request: requestKey(event.source, event.id) },
      );
      log.info(
        { pool: `${namespace}/${pool}`, code: result.code, message: result.message },
        'scaledownwith event',
      );
      if (result.code === 201) return accepted();
      // DESIGN §3: a pool that is already gone is answered 204, not sent to the dead-letter sink.
      if (result.code === 404) return noContent();
      if (result.code === 409 || result.code >= 500) return retryLater(result.message);
      // A refused request (bad target, empty list) will not get better by redelivery.
      return badRequest(result.message);
    }),
  );
  return app;
}
