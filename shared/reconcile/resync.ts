/**
 * Reconciling every pool in a scope with bounded concurrency (the resync tick, namespace fallbacks).
 * @module
 */
import type {
  Malformed,
  VirtualDisk,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../api/index.js';
import { keys } from '../api/index.js';
import { byPool, malformedByPool, plan, poolKey } from '../domain/index.js';
import { blockMalformed } from './blocked.js';
import type { ReconcileDeps, ReconcileOutcome } from './converge.js';
import { claimsOf, converged, reconcilePool, statusToWrite } from './converge.js';
import { runBounded } from './batch.js';
import type { Listed } from '../kube/index.js';
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
) => Promise<ReconcileOutcome>;

/** The scope's claims grouped once by the pool they name, and the uids of those that do not parse. */
interface ClaimsByPool {
  readonly byPool: ReadonlyMap<string, VirtualMachineClaim[]>;
  readonly unreadable: readonly string[];
}

function groupClaims(listed: Listed<VirtualMachineClaim> & { ok: true }): ClaimsByPool {
  const byPool = new Map<string, VirtualMachineClaim[]>();
  for (const c of listed.value) {
    const key = `${c.metadata.namespace ?? ''}/${c.spec.poolName}`;
    const group = byPool.get(key);
    if (group === undefined) byPool.set(key, [c]);
    else group.push(c);
  }
  return { byPool, unreadable: (listed.malformed ?? []).map((m) => m.uid) };
}

/**
 * What a reconcile of `pool` would do given these lists: undefined when it would neither act nor
 * write (the pool is converged), else the reason to reconcile it for real.
 */
function settled(
  deps: ReconcileDeps,
  pool: VirtualMachinePool,
  vms: readonly VirtualMachine[],
  disks: readonly VirtualDisk[],
  claims: ClaimsByPool,
): ReconcileOutcome | undefined {
  const mine = claims.byPool.get(`${pool.metadata.namespace ?? ''}/${pool.metadata.name ?? ''}`);
  const observed = { pool, vms, disks, claims: mine ?? [], unreadableClaims: claims.unreadable };
  const p = plan(observed, deps.now(), deps.rand);
  if (p.actions.length > 0 || statusToWrite(pool, p) !== undefined) return undefined;
  return converged(1, 0, p.recheckAt);
}

/**
 * Reconciles the scope; a failure to list is itself a retry.
 *
 * A namespace or the whole cluster costs one list per resource type (pools, VMs, disks — paged), not
 * three reads per pool: each pool is planned from the lists, and only a pool whose plan would act
 * or write its status is reconciled under the fencing protocol (which reads it again, consistently,
 * before any write). The lists are consistent reads taken before planning, so a pool they show
 * converged was converged at that moment; a change after them brings its own event.
 */
export async function reconcileScope(
  deps: ReconcileDeps,
  scope: Scope,
  reconcile: PoolReconciler = reconcilePool,
): Promise<ScopedOutcome[]> {
  if (scope.kind === 'pool') {
    const { namespace, name } = scope;
    return [scoped({ namespace, name }, await reconcile(deps, namespace, name))];
  }
  const ns = scope.kind === 'namespace' ? scope.namespace : undefined;
  const listed = await deps.kube.listPools(ns);
  if (!listed.ok) return [{ pool: '*', outcome: { kind: 'retry', reason: listed.message } }];
  let vms: Map<string, VirtualMachine[]> | undefined;
  let disks: Map<string, VirtualDisk[]> | undefined;
  let unseen = new Map<string, Malformed[]>();
  let claimList: ClaimsByPool | undefined;
  if (listed.value.length > 0) {
    const [v, d, c] = await Promise.all([
      deps.kube.listVms(ns, keys.poolUid),
      deps.kube.listDisks(ns, keys.poolUid),
      claimsOf(deps.kube, ns),
    ]);
    // Without the lists every pool is reconciled on its own reads, as before.
    if (v.ok && d.ok && c.ok) {
      // Grouped once: each pool's quiet check reads its own claims, not the cluster's.
      claimList = groupClaims(c);
      vms = byPool(v.value);
      disks = byPool(d.value);
      unseen = malformedByPool([...(v.malformed ?? []), ...(d.malformed ?? [])], v.value);
    }
  }
  return runBounded(listed.value, RESYNC_PARALLEL, async (p) => {
    const namespace = p.metadata.namespace ?? '';
    const name = p.metadata.name ?? '';
    const key = poolKey(p);
    // Only the pools an object that does not parse claims stop; every other pool goes on.
    const claims = unseen.get(key);
    if (claims !== undefined)
      return scoped({ namespace, name }, await blockMalformed(deps, p, claims));
    const quiet =
      vms === undefined || disks === undefined || claimList === undefined
        ? undefined
        : settled(deps, p, vms.get(key) ?? [], disks.get(key) ?? [], claimList);
    return scoped({ namespace, name }, quiet ?? (await reconcile(deps, namespace, name)));
  });
}
