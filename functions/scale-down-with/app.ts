/**
 * scale-down-with: the aggregated API `POST …/virtualmachinepools/{name}/scaledownwith` that removes
 * named replicas atomically, and `GET …/victims?count=N` that previews a scale-down's victims. The
 * removal as a CloudEvent is served apart (events.ts).
 * @module
 */
import type { Context, Hono } from 'hono';
import { SUBRESOURCES_GROUP, ScaleDownWithBody, VERSION } from '../../shared/api/index.js';
import { invalidObjectKey } from '../../shared/domain/index.js';
import type { AppDeps, ClientCertificate, NodeEnv, Status } from '../../shared/http/index.js';
import {
  apiResponse,
  auditFields,
  buildFunctionApp,
  clientCertificate,
  createAccessCheck,
  parseBody,
  resolveDeps,
  statusFailure,
  statusResponse,
} from '../../shared/http/index.js';
import { withCallBudget } from '../../shared/kube/index.js';
import { poolMeta, poolVictims, scaleDownWith } from '../../shared/reconcile/index.js';
import { discovery } from './discovery.js';

/** Dependencies; the certificate source is injectable for tests. */
export interface ScaleDownAppDeps extends AppDeps {
  readonly clientCert?: (c: Context<NodeEnv>) => ClientCertificate | undefined;
  /** How long the front-proxy CA read from kube-system is trusted before re-reading (ms). */
  readonly proxyTtlMs?: number;
  /**
   * The aggregated group served: routes, discovery, authorization checks (default the reference's
   * `subresources.virtualization.deckhouse.io`; vmpool's own where the platform serves that one; env
   * `SCALEDOWNWITH_GROUP`).
   */
  readonly group?: string;
}

const EXPECTED = 'expected VirtualMachinePoolScaleDownWith {"targets": [...], "dryRun": [...]}';

/** The aggregated API server app; every error it answers is a metav1.Status. */
export function buildScaleDownApp(input: ScaleDownAppDeps): Hono<NodeEnv> {
  const deps = resolveDeps(input);
  const { kube, log, metrics, health } = deps;
  const app = buildFunctionApp({
    name: 'scale-down-with',
    log,
    metrics,
    health,
    statusPrefix: '/apis',
  });
  const group = input.group ?? SUBRESOURCES_GROUP;
  const API_VERSION = `${group}/${VERSION}`;
  const BASE = `/apis/${API_VERSION}`;
  const POOL = `${BASE}/namespaces/:ns/virtualmachinepools/:name` as const;
  const docs = discovery(group);
  const checkAccess = createAccessCheck({
    kube,
    now: deps.now,
    group,
    clientCert: input.clientCert ?? clientCertificate,
    ...(input.proxyTtlMs === undefined ? {} : { proxyTtlMs: input.proxyTtlMs }),
  });
  /** Names checked before anything is asked of the API server, then the caller's right. */
  const admit = async (c: Context<NodeEnv>, verb: string, subresource?: string) => {
    const { ns: namespace, name } = c.req.param() as { ns: string; name: string };
    const bad = invalidObjectKey(namespace, name);
    if (bad !== undefined) return statusFailure(400, bad, name);
    return checkAccess(c, { verb, namespace, name, ...(subresource ? { subresource } : {}) });
  };
  const answer = (c: Context<NodeEnv>, s: Status): Response => {
    const { ns, name } = c.req.param() as { ns: string; name: string };
    const line = { pool: `${ns}/${name}`, code: s.code, message: s.message };
    // A 5xx is vmpool's own failure (a missing grant, an unreachable API server): an error.
    log[s.code >= 500 ? 'error' : 'info']({ ...line, ...auditFields(c) }, 'scaledownwith');
    return statusResponse(s);
  };

  app.get('/apis', (c) => c.json(docs.apiGroupList));
  app.get(`/apis/${group}`, (c) => c.json(docs.apiGroup));
  app.get(BASE, (c) => c.json(docs.resourceList));

  app.get(POOL, async (c) => {
    const { ns, name } = c.req.param();
    const refused = await admit(c, 'get');
    return apiResponse(refused ?? (await poolMeta(kube, ns, name, API_VERSION)));
  });

  app.get(`${POOL}/victims`, async (c) => {
    const { ns, name } = c.req.param();
    const refused = await admit(c, 'get', 'victims');
    const count = c.req.query('count');
    return apiResponse(refused ?? (await poolVictims(kube, ns, name, count, API_VERSION)));
  });

  app.post(`${POOL}/scaledownwith`, async (c) => {
    const refused = await admit(c, 'create', 'scaledownwith');
    if (refused !== undefined) return answer(c, refused);
    const { ns, name } = c.req.param();
    const body = await parseBody(c, ScaleDownWithBody);
    if (!body.ok) return answer(c, statusFailure(400, `${EXPECTED}: ${body.message}`, name));
    // A caller that hangs up stops the work: its reads and the write are not sent any more.
    const signal = c.req.raw.signal;
    const result = await withCallBudget({ signal }, () => scaleDownWith(kube, ns, name, body.data));
    metrics.reconciles.inc({ function: 'scale-down-with', outcome: String(result.code) });
    return answer(c, result);
  });
  return app;
}
