/**
 * Benchmark 2, replacement latency: delete one member, time until a watch sees its replacement —
 * through the real ApiServerSource adapter into reconcile-pool — beside the ReplicaSet controller
 * replacing a deleted pod.
 * @module
 */
import { GROUP, VERSION } from '../shared/api/index.js';
import type { BenchPlane } from './plane.js';
import { benchPool, benchReplicaSet, clients, paths, sleep } from './objects.js';
import type { Mark, Stack } from './stack.js';
import { watchCollection } from './watch.js';

/** Namespace of the vmpool trials (the stack's adapters must watch it). */
export const REPLACE_NS = 'bench-replace';
/** Members of the pool and the ReplicaSet during the trials. */
export const REPLACE_REPLICAS = 10;

/** Where one vmpool replacement's time went, in ms from the previous step. */
export interface Breakdown {
  /** Delete sent → the adapter's event delivered to reconcile-pool. */
  readonly event: number;
  /** → the reads of the reconcile (pool, VMs, disks) answered. */
  readonly reads: number;
  /** → the intent (fencing) status write answered. */
  readonly fence: number;
  /** → the VM create answered. */
  readonly create: number;
  /** → the benchmark's watch saw the VM. */
  readonly watch: number;
}

/** Latencies in ms, in trial order. */
export interface ReplaceResult {
  readonly vmpool: number[];
  readonly replicaSet: number[];
  /** One per vmpool trial whose steps were all seen. */
  readonly breakdown: Breakdown[];
}

/** The steps of one trial from the stack's marks, or undefined when one is missing. */
function breakdownOf(marks: readonly Mark[], t0: number, seen: number): Breakdown | undefined {
  const after = (t: number, what: (w: string) => boolean) =>
    marks.find((m) => m.at >= t && what(m.what))?.at;
  const ev = after(t0, (w) => w === 'delivered');
  if (ev === undefined) return undefined;
  const fence = after(ev, (w) => w.startsWith('updateStatus:'));
  if (fence === undefined) return undefined;
  const reads = marks
    .filter((m) => m.at >= ev && m.at <= fence && /^(get|list):/.test(m.what))
    .at(-1)?.at;
  const create = after(fence, (w) => w.startsWith('create:'));
  if (reads === undefined || create === undefined) return undefined;
  return {
    event: ev - t0,
    reads: reads - ev,
    fence: fence - reads,
    create: create - fence,
    watch: seen - create,
  };
}

const pick = (names: ReadonlySet<string>): string => {
  const all = [...names];
  return all[Math.floor(Math.random() * all.length)] as string;
};

/**
 * The vmpool namespace of {@link replacement} under a tag (the stack's adapters must watch it): one
 * per CPU placement, each run starting from a fresh pool.
 */
export const replaceNamespace = (tag = ''): string => `${REPLACE_NS}${tag}`;

/** Runs `trials` replacements of each; `tag` names the namespaces of this run (see above). */
export async function replacement(
  plane: BenchPlane,
  stack: Stack,
  trials: number,
  log: (l: string) => void,
  tag = '',
): Promise<ReplaceResult> {
  const c = clients(plane.kc);
  const r = REPLACE_REPLICAS;
  const poolNs = replaceNamespace(tag);
  await c.namespace(poolNs);
  const vms = await watchCollection(plane.kc, paths.vms(poolNs));
  const disks = await watchCollection(plane.kc, paths.disks(poolNs));
  await c.createPool(benchPool(poolNs, 'p', r));
  await Promise.all([
    vms.until((w) => w.names.size >= r),
    disks.until((w) => w.names.size >= 2 * r),
  ]);
  await stack.idle();
  const vmpool: number[] = [];
  const breakdown: Breakdown[] = [];
  for (let i = 0; i < trials; i++) {
    const before = new Set(vms.names);
    const victim = pick(before);
    const next = vms.nextAdded((n) => !before.has(n));
    const t0 = performance.now();
    await c.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'virtualmachines',
      namespace: poolNs,
      name: victim,
    });
    const added = await next;
    vmpool.push(added.at - t0);
    const b = breakdownOf(stack.marks(t0), t0, added.at);
    if (b !== undefined) breakdown.push(b);
    // Settle: the replacement's own disk exists, the pool is whole, and no reconcile is running.
    await disks.until((w) => w.names.has(`${added.name}-root`));
    await vms.until((w) => w.names.size === r);
    await stack.idle(200);
  }
  vms.stop();
  disks.stop();
  log(`replacement: ${trials} vmpool trials done`);

  const ns = `bench-rs-replace${tag}`;
  await c.namespace(ns);
  const pods = await watchCollection(plane.kc, paths.pods(ns));
  await c.createReplicaSet(benchReplicaSet(ns, 'rs', r));
  await pods.until((w) => w.names.size >= r);
  await sleep(500);
  const replicaSet: number[] = [];
  for (let i = 0; i < trials; i++) {
    const before = new Set(pods.names);
    const victim = pick(before);
    const next = pods.nextAdded((n) => !before.has(n));
    const t0 = performance.now();
    await c.core.deleteNamespacedPod({ namespace: ns, name: victim });
    replicaSet.push((await next).at - t0);
    await pods.until((w) => w.names.size === r);
    await sleep(200);
  }
  pods.stop();
  log(`replacement: ${trials} ReplicaSet trials done`);
  return { vmpool, replicaSet, breakdown };
}
