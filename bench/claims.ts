/**
 * Benchmark 9, claims: the time from a VirtualMachineClaim's create to `status.phase: Bound` with an
 * idle member on hand (p50, p99), side by side with the floor — a raw client that watches claims and
 * makes the same two writes (mark the member, write the claim's status) the moment it sees one —;
 * without an idle member (the VM start bounds it: ratio to the simulator's boot time); and the claims
 * a pool with `minIdle: 10` binds per second when they arrive 50 at once. Every run goes through the
 * real adapter and reconcile-pool beside the platform simulator.
 * @module
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Watch } from '@kubernetes/client-node';
import {
  CLAIM_API_VERSION,
  CLAIM_GROUP,
  CLAIM_VERSION,
  GROUP,
  VERSION,
  keys,
} from '../shared/api/index.js';
import { startSimulator } from '../local/simulator/simulator.js';
import type { BenchPlane } from './plane.js';
import { benchPool, clients, percentile } from './objects.js';
import type { Row } from './report.js';
import type { Stack } from './stack.js';

/** The platform's boot time the cold variant models (ms). */
export const BOOT_MS = 2_000;
const MIN_IDLE = 10;
const BURST = 50;

/**
 * Namespaces the stack's adapters must watch for {@link claimsBench}; the floor's namespace is left
 * out on purpose (reconcile-pool must not see its claims).
 */
export const claimsNamespaces = (): string[] => [
  'bench-claims-idle',
  'bench-claims-cold',
  'bench-claims-burst',
];

/** Figures of one run of {@link claimsBench}. */
export interface ClaimsResult {
  /** Claim → Bound with an idle member, ms, one per trial. */
  readonly idleMs: number[];
  /** The raw client's claim → Bound with the same two writes, ms, one per trial. */
  readonly floorMs: number[];
  /** Claim → Bound with no idle member: the pool grows by one and the claim waits for its boot. */
const coldTrials = (plane: BenchPlane, trials: number): Promise<number[]> =>
  trialsOn(plane, 'bench-claims-cold', 0, BOOT_MS, trials, (s) => (s.readyReplicas ?? 0) === 0);

/** {@link BURST} claims at once on a pool keeping 10 idle: claims bound per second. */
async function burst(plane: BenchPlane): Promise<number> {
  const ns = 'bench-claims-burst';
  await claimsPool(plane.kc, ns, MIN_IDLE, BURST + MIN_IDLE);
  const sim = simulate(plane, ns, 200);
  const watch = await watchClaims(plane.kc, ns);
  const api = claimsApi(plane.kc);
  try {
    await untilPool(plane.kc, ns, (s) => (s.idleReplicas ?? 0) >= MIN_IDLE);
    const names = Array.from({ length: BURST }, (_, i) => `b${String(i)}`);
    const t0 = performance.now();
    await Promise.all(names.map((n) => api.create(ns, n, 'p')));
    const last = Math.max(...(await Promise.all(names.map((n) => watch.bound(n, 300_000)))));
    return (BURST * 1000) / (last - t0);
  } finally {
    watch.stop();
    await sim.stop();
  }
}

/** Runs every part of the claims benchmark, floor and vmpool interleaved in one run. */
export async function claimsBench(
  plane: BenchPlane,
  _stack: Stack,
  trials: number,
  log: (l: string) => void,
): Promise<ClaimsResult> {
  const floorMs = await floorTrials(plane, trials);
  log(`claims floor: p50 ${percentile(floorMs, 50).toFixed(0)} ms over ${String(trials)} trials`);
  const idleMs = await idleTrials(plane, trials);
  log(`claims idle: p50 ${percentile(idleMs, 50).toFixed(0)} ms over ${String(trials)} trials`);
  const coldMs = await coldTrials(plane, Math.max(3, Math.round(trials / 10)));
  log(`claims cold: p50 ${percentile(coldMs, 50).toFixed(0)} ms`);
  const perSecond = await burst(plane);
  log(`claims burst: ${perSecond.toFixed(1)} claims/s`);
  return { idleMs, floorMs, coldMs, perSecond, bootMs: BOOT_MS };
}

/** The table rows, each figure beside its floor. */
export function claimsRows(r: ClaimsResult): Row[] {
  const p = (xs: number[], q: number) => percentile(xs, q);
  const ms = (x: number) => `${x.toFixed(0)} ms`;
  const idle50 = p(r.idleMs, 50);
  const floor50 = p(r.floorMs, 50);
  const idle99 = p(r.idleMs, 99);
  const floor99 = p(r.floorMs, 99);
  const cold50 = p(r.coldMs, 50);
  return [
    {
      bench: '9 claims: claim → Bound, idle member',
      figure: `p50 (raw client's two writes: ${ms(floor50)})`,
      value: `${ms(idle50)}, ${(idle50 / floor50).toFixed(2)}× the floor`,
      goal: '',
    },
    {
      bench: '',
      figure: `p99 (raw client: ${ms(floor99)})`,
      value: `${ms(idle99)}, ${(idle99 / floor99).toFixed(2)}× the floor`,
      goal: '',
    },
    {
      bench: '',
      figure: `no idle member, p50 (VM boot ${ms(r.bootMs)})`,
      value: `${ms(cold50)}, ${(cold50 / r.bootMs).toFixed(2)}× the boot`,
      goal: '',
    },
    {
      bench: '',
      figure: `${String(BURST)} claims at once, minIdle ${String(MIN_IDLE)}`,
      value: `${r.perSecond.toFixed(1)} claims/s`,
      goal: '',
    },
  ];
}
