/**
 * Reconciling every pool in a scope with bounded concurrency (the resync tick, namespace fallbacks),
 * a window of pools at a time.
 * @module
 */
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../api/index.js';
import { byPool, malformedByPool, plan, poolKey, shardOf } from '../domain/index.js';
import { blockMalformed } from './blocked.js';
import type { Cause, ReconcileDeps, ReconcileOutcome } from './converge.js';
import { ANY_CAUSE, converged, reconcilePool, statusToWrite } from './converge.js';
import { claimKey, claimsAt, listAt, placesOf, poolPages } from './window.js';
import type { WindowClaims } from './window.js';
import { runBounded } from './batch.js';
import { observeClaims } from './claim-metrics.js';
import type { PoolRef, Scope } from './scope.js';

/** Pools reconciled at once during a resync. */
const RESYNC_PARALLEL = 4;

/** One pool's outcome within a scope. */
export interface ScopedOutcome {
  /** `namespace/name` for logs and messages; `*` when the pools could not be listed. */
  readonly pool: string;
  /** The pool reconciled; absent when the pools could not be listed. */
  readonly ref?: PoolRef;
  readonly outcome: ReconcileOutcome;
}

/** The outcome of one pool of a scope. */
function scoped(ref: PoolRef, outcome: ReconcileOutcome): ScopedOutcome {
  return { pool: `${ref.namespace}/${ref.name}`, ref, outcome };
}

/** How one pool is reconciled (reconcilePool, or a coalescing wrapper of it). */
export type PoolReconciler = (
  deps: ReconcileDeps,
  namespace: string,
  name: string,
  cause: Cause,
) => Promise<ReconcileOutcome>;

/**
 * The converged outcome when a reconcile of `pool` given these lists would neither act nor write
 * (its claims' metrics reported, as that reconcile would), else undefined: reconcile it for real.
 */
function settled(
  deps: ReconcileDeps,
  pool: VirtualMachinePool,
  vms: readonly VirtualMachine[],
  disks: readonly VirtualDisk[],
  claims: WindowClaims,
): ReconcileOutcome | undefined {
  const mine = claims.byPool.get(claimKey(pool.metadata.namespace, pool.metadata.name));
  const observed = { pool, vms, disks, claims: mine ?? [], unreadableClaims: claims.unreadable };
  const p = plan(observed, deps.now(), deps.rand);
  if (p.actions.length > 0 || statusToWrite(pool, p) !== undefined) return undefined;
  // The window read the claims: their metrics are as fresh as a reconcile's (the pool's events may
  // not read them).
  observeClaims(deps.claims, pool, mine ?? [], p);
  return converged(1, 0, p.recheckAt);
}

/**
 * Reconciles the scope; a failure to list is itself a retry.
 *
 * The scope is read a window at a time (`window.ts`): a page of pools, then the VMs, disks and
 * claims of those pools only, so a tick holds one window whatever the cluster's size. Each pool is
 * planned from the window's lists, and only a pool whose plan would act or write its status is
 * reconciled under the fencing protocol (which reads it again, consistently, before any write). The
 * lists are consistent reads taken before planning, so a pool they show converged was converged at
 * that moment; a change after them brings its own event. A tick naming a shard reconciles only the
 * pools whose uid falls in it (`shardOf`); the other shards' instances do the rest.
 */
export async function reconcileScope(
  deps: ReconcileDeps,
  scope: Scope,
  reconcile: PoolReconciler = reconcilePool,
): Promise<ScopedOutcome[]> {
  if (scope.kind === 'pool') {
    const { namespace, name } = scope;
    const cause = { claims: scope.claims ?? true };
    return [scoped({ namespace, name }, await reconcile(deps, namespace, name, cause))];
  }
  const out: ScopedOutcome[] = [];
  const ns = scope.kind === 'namespace' ? scope.namespace : undefined;
  const { shard } = scope;
  // Every pool of the cluster, when this tick lists them all: the claim metrics of any other are
  // of a pool deleted while another instance took its events.
  const seen = scope.kind === 'all' && shard === undefined ? new Set<string>() : undefined;
  for await (const page of poolPages(deps.kube, ns, deps.window)) {
    if (!page.ok) {
      out.push({ pool: '*', outcome: { kind: 'retry', reason: page.message } });
      return out;
    }
    for (const p of page.value) seen?.add(claimKey(p.metadata.namespace, p.metadata.name));
    // A pool that does not parse is there all the same: its series stay until it is deleted.
    for (const m of page.malformed ?? []) seen?.add(claimKey(m.namespace, m.name));
    const mine =
      shard === undefined
        ? page.value
        : page.value.filter((p) => shardOf(p.metadata.uid ?? '', shard.count) === shard.index);
    if (mine.length > 0) out.push(...(await reconcileWindow(deps, mine, reconcile)));
  }
  if (seen !== undefined) deps.claims?.retain(seen);
  return out;
}

/** Reconciles one window of pools from the lists of what they own. */
async function reconcileWindow(
  deps: ReconcileDeps,
  pools: readonly VirtualMachinePool[],
  reconcile: PoolReconciler,
): Promise<ScopedOutcome[]> {
  const places = placesOf(pools);
  const [v, d, c] = await Promise.all([
    listAt(places, (ns, sel, page) => deps.kube.listVms(ns, sel, page)),
    listAt(places, (ns, sel, page) => deps.kube.listDisks(ns, sel, page)),
    claimsAt(deps.kube, places, pools),
  ]);
  // Without the lists every pool of the window is reconciled on its own reads, as before.
  const lists =
    v.ok && d.ok && c.ok
      ? {
          claims: c.value,
          vms: byPool(v.value),
          disks: byPool(d.value),
          unseen: malformedByPool([...(v.malformed ?? []), ...(d.malformed ?? [])], v.value),
        }
      : undefined;
  return runBounded(pools, RESYNC_PARALLEL, async (p) => {
    const namespace = p.metadata.namespace ?? '';
    const name = p.metadata.name ?? '';
    const key = poolKey(p);
    // Only the pools an object that does not parse claims stop; every other pool goes on.
    const claims = lists?.unseen.get(key);
    if (claims !== undefined)
      return scoped({ namespace, name }, await blockMalformed(deps, p, claims));
    const quiet =
      lists === undefined
        ? undefined
        : settled(deps, p, lists.vms.get(key) ?? [], lists.disks.get(key) ?? [], lists.claims);
    // The window read the claims, and its plan may act on one the pool's status never saw.
    return scoped(
      { namespace, name },
      quiet ?? (await reconcile(deps, namespace, name, ANY_CAUSE)),
    );
  });
}
