/**
 * Garbage collection of free Retain disks: the `keep` most recently freed stay warm, the rest go once
 * free for longer than `ttl`. A disk in use (in-use.ts: any VM of the namespace references it, or
 * the platform reports it attached) or bound by a pool's intent is never free, and a paused pool
 * loses nothing.
 * @module
 */
import type { VirtualDisk, VirtualMachine } from '../../api/index.js';
import type { GcPool } from './gc-facts.js';
import { keys } from '../../api/index.js';
import { freedAt, policyOf, poolOwned, reusable } from './disks.js';
import { parseDuration } from '../formats/index.js';
import { attached, referencedBy } from './in-use.js';
import { byPool, isTerminating, nameOf, poolKey } from '../fleet/index.js';

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
 * Plans a GC pass over the cluster-wide lists of pools, VMs and pool disks. Only disks stamped
 * `free-since` are considered: the reconcile stamps them once nothing uses them. Every VM in `vms`
 * keeps the disks it references in its namespace, whoever it belongs to: the pool-labelled VMs, and
 * the namespace's other VMs where a disk would go (a pass reads them only where one would).
 */
export function planGc(
  pools: readonly GcPool[],
  vms: readonly VirtualMachine[],
  disks: readonly VirtualDisk[],
  now: Date,
): GcPlan {
  const collect: Collect[] = [];
  let nextWakeMs: number | undefined;
  // Grouped once: a pool's disks, and the disks its namespace's VMs reference, are then found
  // without a scan per pool (a namespace of P pools and V VMs cost P × V when each pool read them).
  const disksByPool = byPool(disks);
  const referenced = referencedByNamespace(vms);
  for (const pool of pools) {
    const poolDisks = disksByPool.get(poolKey(pool));
    if (poolDisks === undefined || pool.metadata.deletionTimestamp !== undefined) continue;
    // Paused means nothing of the pool is deleted, its free disks included.
    if (pool.spec.paused === true) continue;
    const used = usedBy(pool, referenced);
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
            !used(nameOf(d)) &&
            !attached(d) &&
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

/**
 * The disks the VMs of each namespace reference (members, Terminating ones and strangers alike), by
 * namespace: read once, for every pool of the namespace.
 */
export function referencedByNamespace(
  vms: readonly VirtualMachine[],
): ReadonlyMap<string, ReadonlySet<string>> {
  const byNamespace = new Map<string, VirtualMachine[]>();
  for (const vm of vms) {
    const ns = vm.metadata.namespace ?? '';
    const group = byNamespace.get(ns);
    if (group === undefined) byNamespace.set(ns, [vm]);
    else group.push(vm);
  }
  return new Map([...byNamespace].map(([ns, group]) => [ns, referencedBy(group)]));
}

const NONE: ReadonlySet<string> = new Set();

/**
 * Whether a disk of `pool` is in use: referenced by a VM of the pool's namespace (`referenced`, from
 * {@link referencedByNamespace}) or bound by the pool's recorded intent.
 */
export function usedBy(
  pool: GcPool,
  referenced: ReadonlyMap<string, ReadonlySet<string>>,
): (disk: string) => boolean {
  const inNamespace = referenced.get(pool.metadata.namespace ?? '') ?? NONE;
  const bound = new Set((pool.status?.intent?.bindings ?? []).map((b) => b.disk));
  return (disk) => inNamespace.has(disk) || bound.has(disk);
}
