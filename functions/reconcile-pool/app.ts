/**
 * reconcile-pool: converges the pool an ApiServerSource event points at (or every pool on a
 * PingSource tick). Level-triggered: the event only locates work; live state decides it.
 * @module
 */
import type { Hono } from 'hono';
import { parseWith, sourceEventModel } from '../../shared/api/index.js';
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
import type {
  OwnWrites,
  PoolReconciler,
  Rechecks,
  ScopedOutcome,
} from '../../shared/reconcile/index.js';
import {
  coalesce,
  createRechecks,
  invalidScope,
  isOwnWriteReadPast,
  OWN_WRITES_KEPT,
  ownWrites,
  reconcilePool,
  reconcileScope,
  recheckConverged,
  scopeOf,
  widerCause,
} from '../../shared/reconcile/index.js';

/** Dependencies; the drain-deadline timers are injectable for tests. */
export interface ReconcileAppDeps extends AppDeps {
  readonly rechecks?: Rechecks;
  /** Most creates one pass records (tests make it small to watch bursts). */
  readonly createBurst?: number;
  /** This process's writes a later pass read past (default: a new one; tests pass their own). */
  readonly ownWrites?: OwnWrites;
}

/** The reconcile-pool HTTP app: `POST /` takes one CloudEvent. */
export function buildReconcileApp(input: ReconcileAppDeps): Hono<NodeEnv> {
  const burst = input.createBurst === undefined ? {} : { createBurst: input.createBurst };
  const resolved = resolveDeps(input);
  // Claims by phase, idle members and claim-to-Bound times go to the function's metrics.
  // Events of our own writes, read past by a later pass, need no reconcile (own-writes.ts).
  const written = input.ownWrites ?? ownWrites();
  const deps = { ...resolved, ...burst, claims: resolved.metrics.claims, ownWrites: written };
  const rechecks = input.rechecks ?? createRechecks(deps.now);
  const { kube, metrics } = deps;
  // How full the memory of own writes is: at its bound, events of own writes are reconciled again.
  const remembered = metrics.registry.gauge(
    'vmpool_own_writes_remembered',
    `Writes of this process a later pass read past, whose events need no reconcile (at most ${String(OWN_WRITES_KEPT)}).`,
    [],
  );
  const app = buildFunctionApp({
    name: 'reconcile-pool',
    log: deps.log,
    metrics,
    health: deps.health,
  });
  // One event per created object would otherwise start a herd of identical reconciles of one pool.
  // The follow-up reads the claims when any of its waiters' events was a claim's.
  type Args = Parameters<PoolReconciler>;
  const reconcileOne = coalesce(
    (...[, namespace, name]: Args) => `${namespace}/${name}`,
    reconcilePool,
    ([d, namespace, name, a], [, , , b]): Args => [d, namespace, name, widerCause(a, b)],
  );
  // A pool waiting on a drain is looked at again at its deadline (the resync tick is the fallback).
  const recheck = (results: readonly ScopedOutcome[]): void => {
    recheckConverged(rechecks, results, (ref) => {
      const scope = { kind: 'pool', ...ref } as const;
      void reconcileScope(deps, scope, reconcileOne).then(recheck, () => undefined);
    });
  };
  app.post(
    '/',
    cloudEventHandler(deps.log, async function reconcile(event, ctx) {
      if (await isOwnWriteReadPast(event, written)) {
        remembered.set({}, written.size());
        metrics.reconciles.inc({ function: 'reconcile-pool', outcome: 'ownWrite' });
        // Most events of a scale-up end here: the event's logger is built only to say so.
        if (deps.log.isLevelEnabled('debug')) ctx.log.debug('own write, already read past');
        return accepted();
      }
      const { log } = ctx;
      const parsed = parseWith(sourceEventModel(event.type), event);
      if (!parsed.ok)
        return badRequest(`not an ApiServerSource or PingSource event: ${parsed.message}`);
      const scope = await scopeOf(parsed.data, kube);
      const bad = invalidScope(scope);
      if (bad !== undefined) return badRequest(bad);
      const results = await reconcileScope({ ...deps, log }, scope, reconcileOne);
      remembered.set({}, written.size());
      recheck(results);
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
