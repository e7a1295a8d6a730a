/**
 * Benchmark 3, API cost: requests per reconcile by verb (reconcilePool called directly on a pool no
 * adapter watches), and CloudEvents delivered per user action through the real adapters.
 * @module
 */
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { GROUP, VERSION } from '../shared/api/index.js';
import { createKube } from '../shared/kube/index.js';
import type { RequestCounts } from '../shared/kube/index.js';
import { reconcilePool } from '../shared/reconcile/index.js';
import type { BenchPlane } from './plane.js';
import { benchPool, clients, paths } from './objects.js';
import type { Stack } from './stack.js';
import { silentLog } from './stack.js';
import { watchCollection } from './watch.js';

/** Namespace of the events-per-action measurement (the stack's adapters must watch it). */
export const EVENTS_NS = 'bench-events';

/** Requests by verb of one scenario (all reconciles until a no-op, the final no-op excluded). */
export interface Cost {
  readonly scenario: string;
  readonly reconciles: number;
  readonly reads: number;
  readonly writes: number;
  readonly byVerb: Record<string, number>;
}

/** Deliveries and requests of one user action through the event-driven stack. */
export interface ActionCost {
  readonly action: string;
  readonly events: number;
  readonly requests: number;
  readonly writes: number;
}

const READS = new Set(['get', 'list']);

function diff(a: RequestCounts, b: RequestCounts): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(b)) {
    if (k.includes(':')) continue;
    const d = v - (a[k] ?? 0);
    if (d > 0) out[k] = d;
  }
  return out;
}

function summarize(scenario: string, reconciles: number, byVerb: Record<string, number>): Cost {
  let reads = 0;
  let writes = 0;
  for (const [k, v] of Object.entries(byVerb)) {
    if (READS.has(k)) reads += v;
    else writes += v;
  }
  return { scenario, reconciles, reads, writes, byVerb };
}

/** Requests per reconcile for a no-op, +1, −1 and a rollout of 10 replicas. */
export async function apiCost(plane: BenchPlane): Promise<Cost[]> {
  const ns = 'bench-cost';
  const c = clients(plane.kc);
  await c.namespace(ns);
  await c.createPool(benchPool(ns, 'p', 10));
  const kube = createKube(plane.kc);
  const deps = { kube, now: () => new Date(), rand: Math.random, log: silentLog('cost') };
  /** Reconciles until one does nothing; returns the requests of all but that last no-op. */
  const converge = async (scenario: string): Promise<Cost> => {
    const before = kube.counts();
    let reconciles = 0;
    let last = before;
    for (; reconciles < 20; reconciles++) {
      const at = kube.counts();
      const out = await reconcilePool(deps, ns, 'p');
      if (out.kind !== 'converged') throw new Error(`${scenario}: ${JSON.stringify(out)}`);
      const d = diff(at, kube.counts());
      if (Object.keys(d).every((k) => READS.has(k)) && out.actions === 0) break;
      last = kube.counts();
    }
    return summarize(scenario, reconciles, diff(before, last));
  };
  await converge('setup');
  const at = kube.counts();
  await reconcilePool(deps, ns, 'p');
  const noop = summarize('no-op', 1, diff(at, kube.counts()));
  await c.scalePool(ns, 'p', 11);
  const up = await converge('scale up by 1');
  await c.scalePool(ns, 'p', 10);
  const down = await converge('scale down by 1');
  await c.custom.patchNamespacedCustomObject(
    {
      group: GROUP,
      version: VERSION,
      plural: 'virtualmachinepools',
      namespace: ns,
      name: 'p',
      body: { spec: { virtualMachineTemplate: { spec: { cpu: { cores: 2 } } } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const rollout = await converge('rollout of 10 replicas');
  return [noop, up, down, rollout];
}

/** CloudEvents and requests caused by one user action, until reconcile-pool is idle again. */
export async function eventsPerAction(plane: BenchPlane, stack: Stack): Promise<ActionCost[]> {
  const c = clients(plane.kc);
  await c.namespace(EVENTS_NS);
  const vms = await watchCollection(plane.kc, paths.vms(EVENTS_NS));
  await c.createPool(benchPool(EVENTS_NS, 'p', 5));
  await vms.until((w) => w.names.size >= 5);
  await stack.idle(1000);
  const out: ActionCost[] = [];
  const measure = async (action: string, act: () => Promise<void>): Promise<void> => {
    const ev = stack.delivered();
    const req = stack.counts();
    await act();
    await stack.idle(1000);
    const d = diff(req, stack.counts());
    const s = summarize(action, 0, d);
    out.push({
      action,
      events: stack.delivered() - ev,
      requests: s.reads + s.writes,
      writes: s.writes,
    });
  };
  await measure('scale up by 1', () => c.scalePool(EVENTS_NS, 'p', 6));
  await measure('scale down by 1', () => c.scalePool(EVENTS_NS, 'p', 5));
  await measure('delete one VM', async () => {
    await c.custom.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'virtualmachines',
      namespace: EVENTS_NS,
      name: [...vms.names][0] ?? '',
    });
  });
  vms.stop();
  return out;
}
