/**
 * Reconciling every pool in a scope with bounded concurrency (the resync tick, namespace fallbacks).
 * @module
 */
import type { ReconcileDeps, ReconcileOutcome } from './converge.js';
import { reconcilePool } from './converge.js';
import { runBounded } from './batch.js';
import type { Scope } from './scope.js';

/** Pools reconciled at once during a resync. */
export const RESYNC_PARALLEL = 4;

/** One pool's outcome within a scope. */
export interface ScopedOutcome {
  readonly pool: string;
  readonly outcome: ReconcileOutcome;
}

/** How one pool is reconciled (reconcilePool, or a coalescing wrapper of it). */
export type PoolReconciler = (
  deps: ReconcileDeps,
  namespace: string,
  name: string,
) => Promise<ReconcileOutcome>;

/** Reconciles the scope; a failure to list is itself a retry. */
export async function reconcileScope(
  deps: ReconcileDeps,
  scope: Scope,
  reconcile: PoolReconciler = reconcilePool,
): Promise<ScopedOutcome[]> {
  if (scope.kind === 'pool') {
    const outcome = await reconcile(deps, scope.namespace, scope.name);
    return [{ pool: `${scope.namespace}/${scope.name}`, outcome }];
  }
  const listed = await deps.kube.listPools(
    scope.kind === 'namespace' ? scope.namespace : undefined,
  );
  if (!listed.ok) return [{ pool: '*', outcome: { kind: 'retry', reason: listed.message } }];
  return runBounded(listed.value, RESYNC_PARALLEL, async (p) => {
    const ns = p.metadata.namespace ?? '';
    const name = p.metadata.name ?? '';
    return { pool: `${ns}/${name}`, outcome: await reconcile(deps, ns, name) };
  });
}
