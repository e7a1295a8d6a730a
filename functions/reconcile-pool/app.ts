/**
 * reconcile-pool: converges the pool an ApiServerSource event points at (or every pool on a
 * PingSource tick). Level-triggered: the event only locates work; live state decides it.
 * @module
 */
import type { Hono } from 'hono';
import { SourceEvent } from '../../shared/api/index.js';
import type { Rand } from '../../shared/domain/index.js';
import type { NodeEnv } from '../../shared/http/index.js';
import {
  accepted,
  badRequest,
  buildFunctionApp,
  cloudEventHandler,
  createFunctionMetrics,
  noContent,
  retryLater,
} from '../../shared/http/index.js';
import { coalesce, reconcilePool, reconcileScope, scopeOf } from '../../shared/reconcile/index.js';
import type { FunctionDeps } from '../../shared/runtime/index.js';

/** Dependencies; the clock and the dice default to the real ones. */
export interface ReconcileAppDeps extends Partial<Pick<FunctionDeps, 'metrics'>> {
  readonly kube: FunctionDeps['kube'];
  readonly log: FunctionDeps['log'];
  readonly now?: () => Date;
  readonly rand?: Rand;
}

/** The reconcile-pool HTTP app: `POST /` takes one CloudEvent. */
export function buildReconcileApp(deps: ReconcileAppDeps): Hono<NodeEnv> {
  const metrics = deps.metrics ?? createFunctionMetrics();
  const app = buildFunctionApp({ name: 'reconcile-pool', log: deps.log, metrics });
  // One event per created object would otherwise start a herd of identical reconciles of one pool.
  const reconcileOne = coalesce(
    (_deps: unknown, namespace: string, name: string) => `${namespace}/${name}`,
    reconcilePool,
  );
  app.post(
    '/',
    cloudEventHandler(deps.log, async function reconcile(event, { log }) {
      const parsed = SourceEvent.safeParse(event);
      if (!parsed.success)
        return badRequest(
          `not an ApiServerSource or PingSource event: ${parsed.error.issues[0]?.message ?? ''}`,
        );
      const scope = await scopeOf(parsed.data, deps.kube);
      const results = await reconcileScope(
        {
          kube: deps.kube,
          log,
          now: deps.now ?? (() => new Date()),
          rand: deps.rand ?? Math.random,
        },
        scope,
        reconcileOne,
      );
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
