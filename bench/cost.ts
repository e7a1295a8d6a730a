/**
 * Benchmark 3, API cost: requests per reconcile by verb (reconcilePool called directly on a pool no
 * adapter watches), and CloudEvents delivered per user action through the real adapters.
 * @module
 */
import { pathToFileURL } from 'node:url';
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
import { aligned } from './report.js';

/** Namespace of the events-per-action measurement (the stack's adapters must watch it). */
export const EVENTS_NS = 'bench-events';

/** Requests by verb of one scenario (all reconciles until a no-op, the final no-op excluded). */
export interface Cost {
  readonly scenario: string;
  readonly reconciles: number;
  readonly reads: number;
  /** Every request that is not a get or list, Events included. */
  readonly writes: number;
  /** Events recorded (verb `event`), part of `writes`. */
  readonly events: number;
  readonly byVerb: Record<string, number>;
  /**
   * The writes other than Events the action should cost, and how that figure is made (a scale-up
   * by k: k×(1+disks) creates and one fencing write; a scale-down by k: k deletes, one fencing
   * write and k free-since stamps of the freed Retain disks). Absent for scenarios without one.
   */
  readonly formula?: {
    readonly writes: number;
    readonly text: string;
    /**
     * Writes beyond the formula that are stated with their reason (`beyond`) and so expected: the
     * create side's one status write (issue item 7); 0 on the delete side, where any is a defect.
     */
    readonly stated: number;
    /** The write a reconcile makes beyond the formula, and why it is kept (or why none may be). */
    readonly beyond: string;
  };
}

/** Disks per member of the benchmark pool (one Delete, one Retain). */
const DISKS = 2;

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
  return { scenario, reconciles, reads, writes, events: byVerb.event ?? 0, byVerb };
}

/**
 * True when a scenario's writes other than Events are exactly its formula's plus the writes stated
 * beyond it: fewer would mean a missing write, more an unexplained one.
 */
export function meetsFormula(c: Cost): boolean | undefined {
  return c.formula === undefined
    ? undefined
    : c.writes - c.events === c.formula.writes + c.formula.stated;
}

/**
 * A formula's goal as printed: the formula and the writes stated beyond it with their reason; on a
 * miss of a formula with none stated, why none may be.
 */
export function formulaGoal(f: NonNullable<Cost['formula']>, met: boolean | undefined): string {
  if (f.stated > 0) return `${f.text}, +${f.stated} stated = ${f.writes + f.stated}: ${f.beyond}`;
  return met === true ? f.text : `${f.text}; ${f.beyond}`;
}

/**
 * Beyond the create side's formula, one status write (updateStatus 2 with the fence): the pass after
 * the creates reports the new members, which the fence could not count before they existed. The
 * delete side has none: its fence already reports the members as the deletes leave them.
 */
const upBy = (k: number) => ({
  writes: k * (1 + DISKS) + 1,
  text: `${k}×(1+${DISKS}) creates + 1 fence = ${k * (1 + DISKS) + 1}`,
  stated: 1,
  beyond:
    'a status write after the creates: reports the new members (status.replicas, Progressing cleared) and drops intent.creates once they are seen; the fence was written before the creates',
});
const downBy = (k: number) => ({
  writes: 2 * k + 1,
  text: `${k} deletes + 1 fence + ${k} disk stamps = ${2 * k + 1}`,
  stated: 0,
  beyond:
    'the fence says what the deletes leave (a victim without a finalizer gone, one with a finalizer Terminating) and the done delete left in intent is inert, so no status write should follow them: a write beyond the formula is a defect',
});

/**
 * What starts every reconcile measured here but one: the pool's event (a scale) or a member's, which
 * reads the claims only when the pool's status says a claim may need it (none does here).
 */
const NOT_A_CLAIM = { claims: false } as const;

/** The scenario of a no-op started by a claim's event: the claims are read too. */
export const CLAIM_NOOP = "no-op for a claim's event";

/**
 * Requests for a no-op (for a pool's or member's event, and for a claim's), scale-ups and scale-downs by 1 and by 5 (each against its formula, see
 * {@link Cost.formula}) and a rollout of 10 replicas. No platform runs beside it: VMs get no
 * phase and no finalizer, so a deleted VM is gone at once.
 */
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
      const out = await reconcilePool(deps, ns, 'p', NOT_A_CLAIM);
      if (out.kind !== 'converged') throw new Error(`${scenario}: ${JSON.stringify(out)}`);
      const d = diff(at, kube.counts());
      if (Object.keys(d).every((k) => READS.has(k)) && out.actions === 0) break;
      last = kube.counts();
    }
    return summarize(scenario, reconciles, diff(before, last));
  };
  await converge('setup');
  const at = kube.counts();
  await reconcilePool(deps, ns, 'p', NOT_A_CLAIM);
  const noop = summarize('no-op', 1, diff(at, kube.counts()));
  const claimAt = kube.counts();
  await reconcilePool(deps, ns, 'p', { claims: true });
  const claimNoop = summarize(CLAIM_NOOP, 1, diff(claimAt, kube.counts()));
  const step = async (scenario: string, to: number, formula: Cost['formula']): Promise<Cost> => {
    await c.scalePool(ns, 'p', to);
    return { ...(await converge(scenario)), ...(formula === undefined ? {} : { formula }) };
  };
  const scaled = [
    await step('scale up by 1', 11, upBy(1)),
    await step('scale down by 1', 10, downBy(1)),
    await step('scale up by 5', 15, upBy(5)),
    await step('scale down by 5', 10, downBy(5)),
  ];
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
  return [noop, claimNoop, ...scaled, rollout];
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
    const req = await stack.counts();
    await act();
    await stack.idle(1000);
    const d = diff(req, await stack.counts());
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

/** The API-cost scenarios alone on a bench plane of their own: `npx tsx bench/cost.ts`. */
async function main(): Promise<void> {
  const { startBenchPlane } = await import('./plane.js');
  const plane = await startBenchPlane((l) => {
    console.error(`[cost] ${l}`);
  });
  try {
    const rows = (await apiCost(plane)).map((c) => {
      const ok = meetsFormula(c);
      return [
        c.scenario,
        String(c.reconciles),
        String(c.reads),
        `${c.writes - c.events} + ${c.events} Events`,
        c.formula === undefined ? '' : formulaGoal(c.formula, ok),
        ok === undefined ? '' : ok ? 'PASS' : 'FAIL',
        Object.entries(c.byVerb)
          .map(([k, v]) => `${k} ${v}`)
          .join(', '),
      ];
    });
    const head = ['scenario', 'reconciles', 'reads', 'writes', 'formula', '', 'by verb'];
    console.log(aligned(head, rows));
  } finally {
    await plane.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
