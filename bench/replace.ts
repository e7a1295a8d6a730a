/**
 * Benchmark 2, replacement latency: delete one member, time until a watch sees its replacement —
 * through the real ApiServerSource adapter, the simulated Broker and reconcile-pool in its own
 * process (one HTTP hop more than in-process, as deployed) — beside the ReplicaSet controller
 * replacing a deleted pod.
 * @module
 */
import { GROUP, VERSION } from '../shared/api/index.js';
import type { BenchPlane } from './plane.js';
import { benchPool, benchReplicaSet, clients, paths, quietBefore, sleep } from './objects.js';
import type { Mark } from './broker.js';
import type { Stack } from './stack.js';
import { apiMsSince } from './ticks.js';
import { watchCollection } from './watch.js';

/** Namespace of the vmpool trials (the stack's adapters must watch it). */
export const REPLACE_NS = 'bench-replace';
/** Members of the pool and the ReplicaSet during the trials. */
export const REPLACE_REPLICAS = 10;

/**
 * Where one vmpool replacement's time went, in ms. reconcile-pool runs in its own process, so the
 * steps inside its reconcile are not seen one by one; {@link ReplaceResult.apiMs} gives their
 * latency by verb instead.
 */
export interface Breakdown {
  /** Delete sent → the Broker sent the adapter's event to reconcile-pool. */
  readonly event: number;
  /** → the benchmark's watch saw the new VM: the HTTP hop, reads, fence write, create, watch. */
  readonly reconcile: number;
  /** Event sent → reconcile-pool answered it (its whole reconcile, the disk's create included). */
  readonly answered: number;
}

/** Latencies in ms, in trial order. */
export interface ReplaceResult {
  readonly vmpool: number[];
  readonly replicaSet: number[];
  /** One per vmpool trial whose steps were all seen. */
  readonly breakdown: Breakdown[];
  /**
   * reconcile-pool's mean API latency by verb over the vmpool trials, in ms (its /metrics
   * histogram `vmpool_api_request_duration_seconds`).
   */
  readonly apiMs: Record<string, number>;
}

/** The steps of one trial from the stack's marks, or undefined when one is missing. */
function breakdownOf(marks: readonly Mark[], t0: number, seen: number): Breakdown | undefined {
  const ev = marks.find((m) => m.at >= t0 && m.what === 'delivered');
  if (ev === undefined) return undefined;
  // The first answer to that event (its first delivery's, unless it was redelivered).
  const answered = marks.find((m) => m.event === ev.event && m.what === 'answered')?.at;
  if (answered === undefined) return undefined;
  return { event: ev.at - t0, reconcile: seen - ev.at, answered: answered - ev.at };
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
  const ns = `bench-rs-replace${tag}`;
  await c.namespace(ns);
  const pods = await watchCollection(plane.kc, paths.pods(ns));
  await c.createReplicaSet(benchReplicaSet(ns, 'rs', r));
  await pods.until((w) => w.names.size >= r);
  // The trials start on a quiet control plane, not on the work the scale-ups before left behind,
  // and take turns, a vmpool trial then a ReplicaSet one: whatever slows the host for a while
  // slows both, where 100 of one then 100 of the other put it all in one of them (in the run of
  // dde9c38, 19 of the 23 vmpool trials from the 72nd to the 94th took 152–378 ms, the other 81
  // 52–104 ms).
  await quietBefore(plane.planePids(), log, 'the trials');
  const metrics0 = await stack.metrics();
  const vmpool: number[] = [];
  const replicaSet: number[] = [];
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
    // Settle: the replacement's own disk exists, the pool is whole, and no reconcile is running.
    await disks.until((w) => w.names.has(`${added.name}-root`));
    await vms.until((w) => w.names.size === r);
    await stack.idle(200);
    // After the settle: reconcile-pool answers the event once the disk is made too, after the VM.
    const b = breakdownOf(stack.marks(t0), t0, added.at);
    if (b !== undefined) breakdown.push(b);

    const present = new Set(pods.names);
    const pod = pick(present);
    const replaced = pods.nextAdded((n) => !present.has(n));
    const s0 = performance.now();
    await c.core.deleteNamespacedPod({ namespace: ns, name: pod });
    replicaSet.push((await replaced).at - s0);
    await pods.until((w) => w.names.size === r);
    await sleep(200);
  }
  const apiMs = apiMsSince(metrics0, await stack.metrics());
  vms.stop();
  disks.stop();
  pods.stop();
  log(`replacement: ${trials} vmpool and ${trials} ReplicaSet trials done, taking turns`);
  return { vmpool, replicaSet, breakdown, apiMs };
}
