/**
 * Benchmark 4d, bounded memory at any scale: 10,000 converged pools of 3 members (one disk each),
 * then one resync tick delivered to reconcile-pool and one pass delivered to disk-gc-tick, each in
 * its own process started as the image starts it (its snapshot, its flags) in a memory cgroup of the
 * pods' limit where this machine allows: their peak RSS, their time, their API requests by verb.
 * @module
 */
import { createKube } from '../shared/kube/index.js';
import { reconcilePool, runBounded } from '../shared/reconcile/index.js';
import type { BenchPlane } from './plane.js';
import type { Row } from './report.js';
import { benchPool, clients } from './objects.js';
import { functionTicks } from './ticks.js';
import type { FunctionTick, Start } from './ticks.js';
import { silentLog } from './stack.js';

/** What benchmark 4d measured. */
export interface MemoryResult {
  readonly pools: number;
  readonly replicas: number;
  readonly objects: number;
  readonly setupMs: number;
  readonly resync: FunctionTick;
  readonly gc: FunctionTick;
}

/** Builds `pools` converged pools of `replicas` members, then one resync tick and one GC pass. */
export async function memoryAtScale(
  plane: BenchPlane,
  starts: { readonly reconcile: Start; readonly gc: Start },
  pools: number,
  replicas: number,
  log: (l: string) => void,
): Promise<MemoryResult> {
  const ns = 'bench-scale';
  const c = clients(plane.kc);
  await c.namespace(ns);
  const kube = createKube(plane.kc);
  const deps = { kube, now: () => new Date(), rand: Math.random, log: silentLog('scale') };
  const t0 = performance.now();
  let done = 0;
  // Created and converged pool by pool, 32 at once: the cluster grows as a real one does.
  await runBounded(
    Array.from({ length: pools }, (_, i) => `s${i}`),
    32,
    async (name) => {
      const p = benchPool(ns, name, replicas);
      // One disk per member: the object count stays within what this machine's etcd takes quickly.
      p.spec.virtualDiskTemplates = p.spec.virtualDiskTemplates.filter((t) => t.name === 'root');
      const vm = p.spec.virtualMachineTemplate.spec;
      vm.blockDeviceRefs = vm.blockDeviceRefs.filter((r) => r.name !== 'cache');
      await c.createPool(p);
      const o = await reconcilePool(deps, ns, name);
      if (o.kind !== 'converged') throw new Error(`scale setup: ${name} ${o.kind}`);
      if (++done % 1000 === 0)
        log(
          `scale: ${done}/${pools} pools converged (${((performance.now() - t0) / 1000).toFixed(0)} s)`,
        );
    },
  );
  const setupMs = performance.now() - t0;
  const objects = pools * (1 + 2 * replicas);
  log(`scale: ${pools} pools, ${objects} objects in ${(setupMs / 1000).toFixed(0)} s`);
  const tick = async (start: Start, what: string) => {
    const [t] = await functionTicks(start, plane.cp.kubeconfigPath, 1, log, what);
    if (t === undefined) throw new Error(`scale: no ${what} tick measured`);
    return t;
  };
  try {
    return {
      pools,
      replicas,
      objects,
      setupMs,
      resync: await tick(starts.reconcile, 'resync'),
      gc: await tick(starts.gc, 'gc'),
    };
  } finally {
    // Left in place, its 70,000 objects would weigh on the API server (its watch cache, etcd) in
    // every benchmark after this one.
    const t = performance.now();
    await c.dropNamespace(ns);
    log(`scale: its namespace deleted in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }
}

/** The bound of benchmark 4d and of the resync row at 1,000 pools: each function's peak RSS. */
export const PEAK_RSS_GOAL_MIB = 128;

const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The rows of benchmark 4d. */
export function memoryRows(m: MemoryResult): Row[] {
  const scale = `${m.pools.toLocaleString('en-US')} pools × ${m.replicas} members`;
  const within = (t: FunctionTick) => t.peakRssMiB <= PEAK_RSS_GOAL_MIB;
  return [
    {
      bench: `4d bounded memory, ${scale} (${m.objects.toLocaleString('en-US')} objects)`,
      figure: 'resync tick: peak RSS of reconcile-pool (its start included)',
      value: `${m.resync.peakRssMiB} MiB`,
      goal: `≤ ${PEAK_RSS_GOAL_MIB} MiB`,
      pass: within(m.resync),
    },
    {
      bench: '',
      figure: 'resync tick: time, list requests, writes',
      value: `${secs(m.resync.ms)}, ${m.resync.requests.list ?? 0}, ${m.resync.writes}`,
      goal: '0 writes',
      pass: m.resync.writes === 0,
    },
    {
      bench: '',
      figure: 'disk-gc pass, nothing due: peak RSS of disk-gc-tick',
      value: `${m.gc.peakRssMiB} MiB`,
      goal: `≤ ${PEAK_RSS_GOAL_MIB} MiB`,
      pass: within(m.gc),
    },
    {
      bench: '',
      figure: 'disk-gc pass: time, list requests, writes',
      value: `${secs(m.gc.ms)}, ${m.gc.requests.list ?? 0}, ${m.gc.writes}`,
      goal: '0 writes',
      pass: m.gc.writes === 0,
    },
    {
      bench: '',
      figure: 'setup (create and converge every pool)',
      value: secs(m.setupMs),
      goal: '',
    },
  ];
}
