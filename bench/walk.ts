/**
 * The memory floor of `plan()`'s linearity goal: one bare read of the fields a plan reads of every
 * object it is given, timed on the same objects in the same process. No code can read a pool's
 * objects for less, so how this read's cost per member grows from 1,000 to 10,000 members is what the
 * machine's memory alone adds (objects that outgrow the CPU's caches are read from memory), and
 * `plan()`'s time over it says how many such reads a plan costs.
 * @module
 */
import { performance } from 'node:perf_hooks';
import { keys } from '../shared/api/index.js';
import type { Observed } from '../shared/domain/index.js';

/**
 * Reads, once, what a plan reads of each VM (name, uid, labels, deletion stamp, controller, disk
 * references, phase) and of each disk (name, uid, resourceVersion, labels, controller, free-since
 * stamp, size, phase). Returns a sum of what it read, so that no read can be left out by the JIT.
 */
export function readOnce(obs: Pick<Observed, 'vms' | 'disks'>): number {
  let sum = 0;
  const len = (s: string | undefined): number => (s === undefined ? 0 : s.length);
  for (const vm of obs.vms) {
    const m = vm.metadata;
    sum += len(m.name) + len(m.uid) + len(m.labels?.[keys.poolUid]) + len(m.deletionTimestamp);
    sum += len(m.ownerReferences?.[0]?.uid) + len(vm.status?.phase);
    for (const r of vm.spec.blockDeviceRefs ?? []) sum += len(r.kind) + len(r.name);
  }
  for (const d of obs.disks) {
    const m = d.metadata;
    sum += len(m.name) + len(m.uid) + len(m.resourceVersion) + len(m.labels?.[keys.poolUid]);
    sum += len(m.labels?.[keys.diskTemplate]) + len(m.ownerReferences?.[0]?.uid);
    sum +=
      len(m.annotations?.[keys.freeSince]) + len(String(d.spec.persistentVolumeClaim?.size ?? ''));
    sum += len(d.status?.phase);
  }
  return sum;
}

/**
 * Median wall ms of one {@link readOnce} of `obs` (a few warm-up reads, then reads until `budgetMs`
 * passed and at least `minRuns` were timed), with what the last read summed.
 */
export function readOnceMs(
  obs: Pick<Observed, 'vms' | 'disks'>,
  budgetMs = 250,
  minRuns = 7,
): { readonly ms: number; readonly sum: number } {
  let sum = 0;
  for (let i = 0; i < 3; i++) sum = readOnce(obs);
  const times: number[] = [];
  const until = performance.now() + budgetMs;
  while (times.length < minRuns || performance.now() < until) {
    const t0 = performance.now();
    sum = readOnce(obs);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)] ?? NaN, sum };
}
