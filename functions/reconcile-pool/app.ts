/**
 * reconcile-pool: converges the pool an ApiServerSource event points at (or every pool on a
 * PingSource tick). Level-triggered: the event only locates work; live state decides it.
 * @module
 */
import type { Hono } from 'hono';
import { SourceEvent, parseWith } from '../../shared/api/index.js';
import type { AppDeps, NodeEnv } from '../../shared/http/index.js';
import {
  accepted,
  badRequest,
  buildFunctionApp,
  cloudEventHandler,
  noContent,
  resolveDeps,
  retryLater,
} from '../../shared/http/index.js';
import { coalesce, reconcilePool, reconcileScope, scopeOf } from '../../shared/reconcile/index.js';

/** The reconcile-pool HTTP app: `POST /` takes one CloudEvent. */
export function buildReconcileApp(input: AppDeps): Hono<NodeEnv> {
  const deps = resolveDeps(input);
  const { kube, metrics } = deps;
  const app = buildFunctionApp({ name: 'reconcile-pool', log: deps.log, metrics });
  // One event per created object would otherwise start a herd of identical reconciles of one pool.
  const reconcileOne = coalesce(
    (_deps: unknown, namespace: string, name: string) => `${namespace}/${name}`,
    reconcilePool,
  );
  app.post(
    '/',
    cloudEventHandler(deps.log, async function reconcile(event, { log }) {
      const parsed = parseWith(SourceEvent, event);
      if (!parsed.ok)
        return badRequest(`not an ApiServerSource or PingSource event: ${parsed.message}`);
      const scope = await scopeOf(parsed.data, kube);
      const results = await reconcileScope({ ...deps, log }, scope, reconcileOne);
      for (const r of results) {
        metrics.reconciles.inc({ function: 'reconcile-pool', outcome: r.outcome.kind });
        if (r.outcome.kind === 'failed')
          log.warn(
            { pool: r.pool, failures: r.outcome.failures.map((f) => f.message) },
            'pool cannot converge',
          );
        else if (r.outcome.kind === 'converged' && r.outcome.actions === 0)
          log.debug({ pool: r.pool }, 'nothing to do');
        else log.info({ pool: r.pool, outcome: r.outcome.kind }, 'reconciled');
      }
      const retry = results.find((r) => r.outcome.kind === 'retry');
      if (retry !== undefined) return retryLater(`pool ${retry.pool} did not converge yet`);
      return results.length > 0 && results.every((r) => r.outcome.kind === 'gone')
        ? noContent()
        : accepted();
    }),
  );
  return app;
}
