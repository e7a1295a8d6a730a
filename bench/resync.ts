/**
 * Benchmark 4b, the resync tick at scale: 1,000 pools of one replica (+2 disks) converged, then
 * PingSource ticks over the whole cluster delivered to reconcile-pool, started as the image starts it, in its own
 * process, as deployed: its API requests by verb (from its /metrics), the tick's time and the
 * process's peak RSS.
 * @module
 */
import { createKube } from '../shared/kube/index.js';
import { reconcilePool, runBounded } from '../shared/reconcile/index.js';
import type { BenchPlane } from './plane.js';
import { benchPool, clients } from './objects.js';
import { silentLog } from './stack.js';
import { functionTicks } from './ticks.js';
import type { Start } from './ticks.js';
import { WINDOW } from '../shared/reconcile/index.js';

/** What the benchmark measured. */
export interface ResyncResult {
  readonly pools: number;
  readonly replicas: number;
  readonly setupMs: number;
  /** Converging them all in-process (setup; every pool needs work), 32 pools at once. */
  readonly convergeMs: number;
  /** Ticks over the converged pools, in the function's process: times in ms. */
  readonly tickMs: number[];
  /** Requests of one tick by verb (the last one). */
  readonly requests: Record<string, number>;
  readonly lists: number;
  readonly writes: number;
  /** List requests a tick needs: per window of pools, its page, its VMs, disks and claims. */
  readonly expectedLists: number;
  readonly peakRssMiB: number;
}

/** Sets up `pools` pools of `replicas`, converges them, then times `ticks` resync ticks. */
export async function resyncTick(
  plane: BenchPlane,
  start: Start,
  pools: number,
  replicas: number,
  ticks: number,
  log: (l: string) => void,
): Promise<ResyncResult> {
  const ns = 'bench-resync';
  const c = clients(plane.kc);
  await c.namespace(ns);
  const t0 = performance.now();
  const created = await runBounded(
    Array.from({ length: pools }, (_, i) => `r${i}`),
    32,
    async (name) => {
      await c.createPool(benchPool(ns, name, replicas));
      return name;
    },
  );
  const setupMs = performance.now() - t0;
  const kube = createKube(plane.kc);
  const deps = { kube, now: () => new Date(), rand: Math.random, log: silentLog('resync') };
  const t1 = performance.now();
  // Setup, not measured against a goal: every pool needs work, 32 reconciled at once.
  const converged = await runBounded(created, 32, (name) => reconcilePool(deps, ns, name));
  const convergeMs = performance.now() - t1;
  const notDone = converged.filter((o) => o.kind !== 'converged');
  if (notDone.length > 0) throw new Error(`resync setup: ${notDone.length} pools did not converge`);
  log(
    `resync: ${pools} pools created in ${setupMs.toFixed(0)} ms, converged in ${convergeMs.toFixed(0)} ms`,
  );

  const ticksRun = await functionTicks(start, plane.cp.kubeconfigPath, ticks, log, 'resync');
  const last = ticksRun.at(-1);
  if (last === undefined) throw new Error('resync: no tick measured');
  const lists = last.requests.list ?? 0;
  const windows = Math.max(1, Math.ceil(pools / WINDOW));
  const pages = (n: number) => Math.max(1, Math.ceil(n / 500));
  const perWindow = (n: number) => Math.min(n, WINDOW);
  return {
    pools,
    replicas,
    setupMs,
    convergeMs,
    tickMs: ticksRun.map((t) => t.ms),
    requests: last.requests,
    lists,
    writes: last.writes,
    // Each window: a page of pools, then its VMs, disks and claims (one namespace here).
    expectedLists:
      windows *
      (1 + pages(perWindow(pools) * replicas) + pages(perWindow(pools) * replicas * 2) + 1),
    peakRssMiB: Math.max(...ticksRun.map((t) => t.peakRssMiB)),
  };
}
