/**
 * Garbage collection of free Retain disks: the `keep` most recently freed stay warm, the rest go once
 * free for longer than `ttl`. A disk a live member references or a pool's intent binds is never free.
 * @module
 */
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../api/index.js';
import { keys } from '../api/index.js';
import { diskRefs, freedAt, policyOf, poolOwned, reusable } from './disks.js';
import { parseDuration } from './duration.js';
import { byPool, isTerminating, membersOf, nameOf, poolKey } from './membership.js';

/** A disk to delete, with the preconditions that make the delete safe. */
export interface Collect {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly pool: string;
  /** How long it had been free, in ms. */
  readonly freeForMs: number;
}

/** The outcome of one GC pass. */
export interface GcPlan {
  readonly collect: Collect[];
  /** Milliseconds until the next disk passes its ttl, if any will. */
  readonly nextWakeMs: number | undefined;
}

/**
 * Plans a GC pass over the cluster-wide lists of pools, pool VMs and pool disks. Only disks stamped
 * `free-since` are considered: the reconcile stamps them once nothing uses them.
 */
export function planGc(
  pools: readonly VirtualMachinePool[],
  vms: readonly VirtualMachine[],
  disks: readonly VirtualDisk[],
  now: Date,
): GcPlan {
  const collect: Collect[] = [];
  let nextWakeMs: number | undefined;
  // Grouped once: a pool's disks and VMs are then found without scanning the cluster's per pool.
  const disksByPool = byPool(disks);
  const vmsByPool = byPool(vms);
  for (const pool of pools) {
    const key = poolKey(pool);
    const poolDisks = disksByPool.get(key);
    if (poolDisks === undefined || pool.metadata.deletionTimestamp !== undefined) continue;
    const used = usedDisks(pool, vmsByPool.get(key) ?? []);
    for (const t of pool.spec.virtualDiskTemplates) {
      if (policyOf(t) !== 'Retain' || t.reclaim?.ttl === undefined) continue;
      const ttl = parseDuration(t.reclaim.ttl);
      if (ttl === undefined) continue;
      const free = poolDisks
        .filter(
          (d) =>
            poolOwned(pool, d) &&
            d.metadata.labels?.[keys.diskTemplate] === t.name &&
            !isTerminating(d) &&
            !used.has(nameOf(d)) &&
            freedAt(d) !== undefined,
        )
        .sort((a, b) => (freedAt(b) ?? 0) - (freedAt(a) ?? 0) || (nameOf(a) < nameOf(b) ? -1 : 1));
      // Only disks that could be reused fill the warm buffer: a Failed disk keeps nothing warm.
      const warm = new Set(free.filter(reusable).slice(0, t.reclaim.keep).map(nameOf));
      for (const d of free) {
        if (warm.has(nameOf(d))) continue;
        const age = now.getTime() - (freedAt(d) ?? now.getTime());
        if (age > ttl) {
          collect.push({
            namespace: d.metadata.namespace ?? pool.metadata.namespace ?? '',
            name: nameOf(d),
            uid: d.metadata.uid ?? '',
            resourceVersion: d.metadata.resourceVersion ?? '',
            pool: nameOf(pool),
            freeForMs: age,
          });
        } else {
          const wait = Math.max(ttl - age, 1000);
          nextWakeMs = nextWakeMs === undefined ? wait : Math.min(nextWakeMs, wait);
        }
      }
    }
  }
  return { collect, nextWakeMs };
}

/** Disks referenced by the pool's non-Terminating members or bound by its recorded intent. */
export function usedDisks(pool: VirtualMachinePool, vms: readonly VirtualMachine[]): Set<string> {
  const used = new Set<string>();
  for (const m of membersOf(pool, vms))
    if (!isTerminating(m)) for (const d of diskRefs(m)) used.add(d);
  for (const b of pool.status?.intent?.bindings ?? []) used.add(b.disk);
  return used;
}
