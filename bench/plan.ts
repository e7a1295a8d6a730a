/**
 * Benchmark of the pure core: how long `plan()` takes on a converged pool, by pool size. No API
 * server is involved; the pools are grown with the domain's own plans in the unit tests' in-memory
 * world (the user guide's `runners` pool: two disks per member, one Delete, one Retain), then passed
 * through JSON and the models as a reconcile reads them ({@link asRead}), so every figure is what a
 * reconcile of an idle pool of that size spends deciding it has nothing to do.
 *
 * `npx tsx bench/plan.ts [sizes…]` prints the table (default 10 100 1000 10000); with `--profile`, where
 * the time goes at each size (default 1000 10000), from a CPU profile; with `--json`, every figure the
 * bench records. `npm run bench` runs this file bundled as the functions ship (see plan-shipped.ts).
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import {
  VirtualDisk,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../shared/api/index.js';
import { plan } from '../shared/domain/index.js';
import type { Observed, Plan } from '../shared/domain/index.js';
import { NOW, pool } from '../test/unit/builders.js';
import { converge, observedOf } from '../test/unit/world.js';
import type { World } from '../test/unit/world.js';
import { seededRandom } from '../local/simulator/rng.js';
import { profileSelfTime } from './profile.js';
import { aligned } from './report.js';
import { readOnceMs } from './walk.js';

/** One size measured. */
export interface PlanRow {
  /** Members of the converged pool (each with 2 disks). */
  readonly members: number;
  /** Median wall time of one `plan()` call, ms. */
  readonly medianMs: number;
  /** `medianMs / members`. */
  readonly msPerMember: number;
  /**
   * Median CPU time of one call, ms (this process's user + system time, so other processes on a
   * shared machine inflate it less than wall time).
   */
  readonly cpuMs: number;
  /** Timed calls behind the median. */
  readonly runs: number;
  /**
   * Median CPU ms of one call in each round of {@link planBench} (the sizes take turns, round by
   * round): per-member growth is judged round by round, so a slow spell of a shared machine falls on
   * both sizes of a pair rather than on one size's whole turn.
   */
  readonly cpuByRound?: readonly number[];
  /** The pool's VMs and disks serialized as JSON, MiB: how much memory each plan walks. */
  readonly objectsMiB: number;
  /**
   * Median ms of one bare read of the fields a plan reads of every VM and disk, on the same objects
   * (`walk.ts`): the memory floor of a plan at this size.
   */
  readonly readOnceMs: number;
}

/** Options of {@link planBench}. */
export interface PlanBenchOptions {
  /** Pool sizes (members); default 10, 100, 1,000, 10,000. */
  readonly sizes?: readonly number[];
  /** Time spent timing each size, ms (at least `minRuns` calls whatever it takes); default 1,000. */
  readonly budgetMs?: number;
  /** Fewest timed calls per size; default 7. */
  readonly minRuns?: number;
  /** Rounds in which the sizes take turns; default 12. */
  readonly rounds?: number;
}

/** The sizes {@link planBench} measures unless told otherwise. */
export const PLAN_SIZES: readonly number[] = [10, 100, 1_000, 10_000];

/** A converged `runners` pool of `members` replicas, grown from zero by the domain's own plans. */
export function convergedPool(members: number): World {
  const empty: World = { pool: pool({ replicas: members }), vms: [], disks: [] };
  // A pass creates a bounded batch of members, so a large pool takes one pass per batch.
  const { w, plans } = converge(empty, NOW, 8 + Math.ceil(members / 100));
  const last = plans.at(-1);
  if (w.vms.length !== members || last === undefined || last.actions.length > 0 || last.writeStatus)
    throw new Error(`pool of ${members} did not converge`);
  return w;
}

/**
 * A pool's objects as a reconcile holds them: JSON text parsed, each object through its model (the
 * client's list does the same, item by item). The unit world builds them by spreading objects, which
 * gives their metadata other shapes (and layouts in memory) than the ones plan() meets in a function.
 */
export function asRead(w: World): Observed {
  const parsed = <T>(model: { parse(x: unknown): T }, o: unknown): T =>
    model.parse(JSON.parse(JSON.stringify(o)));
  const obs = observedOf(w);
  return {
    ...obs,
    pool: parsed(VirtualMachinePool, obs.pool),
    vms: obs.vms.map((v) => parsed(VirtualMachine, v)),
    disks: obs.disks.map((d) => parsed(VirtualDisk, d)),
    claims: (obs.claims ?? []).map((c) => parsed(VirtualMachineClaim, c)),
  };
}

const median = (xs: readonly number[]): number => {
  const s = xs.toSorted((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

/**
 * Times `plan()` on converged pools, one row per size: members → median ms and ms per member.
 * Every pool is grown first; then the sizes take turns in `rounds` rounds, each size timed for its
 * share of `budgetMs` in each (so noise of a shared machine falls on every size alike). Synchronous
 * and CPU-bound (about `budgetMs` per size plus growing the pools: a few seconds in all with the
 * defaults); call it where nothing else competes for the CPU, e.g. before the control plane starts.
 * Each timed call must return a plan with nothing to do, or it throws.
 */
export function planBench(options: PlanBenchOptions = {}): PlanRow[] {
  const { sizes = PLAN_SIZES, budgetMs = 1_000, minRuns = 7, rounds = 12 } = options;
  const pools = sizes.map((members) => {
    const obs = asRead(convergedPool(members));
    const check = (p: Plan): void => {
      if (p.actions.length > 0 || p.writeStatus) throw new Error(`pool of ${members} is not idle`);
    };
    // Warm-up, and how many calls fill one round's share of the budget.
    const w = timePlans(obs, 0, 3, check);
    const reps = Math.max(1, Math.round(budgetMs / rounds / Math.max(median(w.wall), 1e-3)));
    return {
      members,
      obs,
      check,
      reps,
      wall: [] as number[],
      cpu: [] as number[],
      byRound: [] as number[],
    };
  });
  for (let r = 0; r < rounds; r++)
    for (const p of pools) {
      const t = timePlans(p.obs, 0, Math.max(p.reps, Math.ceil(minRuns / rounds)), p.check, 0);
      p.wall.push(...t.wall);
      p.cpu.push(...t.cpu);
      p.byRound.push(median(t.cpu));
    }
  return pools.map((p) => {
    const m = median(p.wall);
    return {
      members: p.members,
      medianMs: m,
      msPerMember: m / p.members,
      cpuMs: median(p.cpu),
      runs: p.wall.length,
      cpuByRound: p.byRound,
      objectsMiB: Buffer.byteLength(JSON.stringify([p.obs.vms, p.obs.disks])) / 2 ** 20,
      readOnceMs: readOnceMs(p.obs, budgetMs / 4).ms,
    };
  });
}

/**
 * This machine's last-level CPU cache as Linux reports it (e.g. `32768K`), or undefined where sysfs
 * does not say: the pools whose objects outgrow it are read from memory, not from the cache.
 */
export function lastLevelCache(): string | undefined {
  const dir = '/sys/devices/system/cpu/cpu0/cache';
  try {
    const levels = readdirSync(dir)
      .filter((d) => d.startsWith('index'))
      .map((d) => ({
        level: Number(readFileSync(`${dir}/${d}/level`, 'utf8')),
        size: readFileSync(`${dir}/${d}/size`, 'utf8').trim(),
      }))
      .sort((a, b) => b.level - a.level);
    return levels[0]?.size;
  } catch {
    return undefined;
  }
}

/**
 * `plan()` on `obs`, timed: `warmUp` calls for the JIT and one more (untimed), then calls until
 * `budgetMs` passed and at least `minRuns` were timed; each call's wall and CPU ms, and the last plan
 * (`check` sees each timed one and the warm-up's).
 */
function timePlans(
  obs: Observed,
  budgetMs: number,
  minRuns: number,
  check: (p: Plan) => void = () => undefined,
  warmUp = 3,
): { wall: number[]; cpu: number[]; last: Plan } {
  const rand = seededRandom(1);
  const wall: number[] = [];
  const cpu: number[] = [];
  // Warm-up: let the JIT settle before anything is timed.
  let last = plan(obs, NOW, rand);
  for (let i = 0; i < warmUp; i++) check((last = plan(obs, NOW, rand)));
  const until = performance.now() + budgetMs;
  while (wall.length < minRuns || performance.now() < until) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    last = plan(obs, NOW, rand);
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    check(last);
  }
  return { wall, cpu, last };
}

/** plan() of a scale-down to zero: every member ranked and recorded to leave. */
export interface ScaleDownRow {
  readonly members: number;
  /** Median wall time of one `plan()` call, ms. */
  readonly medianMs: number;
  /** Deletes the plan carries (one per member). */
  readonly deletes: number;
  readonly runs: number;
}

/**
 * Times `plan()` on a converged pool of `members` whose `spec.replicas` was set to 0: the victim
 * ranking over every member, which a rescan per pick made quadratic.
 */
export function scaleDownBench(members = 1_000, budgetMs = 1_000): ScaleDownRow {
  const w = convergedPool(members);
  const obs = asRead({ ...w, pool: { ...w.pool, spec: { ...w.pool.spec, replicas: 0 } } });
  const t = timePlans(obs, budgetMs, 7);
  const deletes = t.last.actions.filter((a) => a.kind === 'deleteVm').length;
  return { members, medianMs: median(t.wall), deletes, runs: t.wall.length };
}

/** The rows as an aligned table, with each size's ms per member relative to the first size's. */
export function planTable(rows: readonly PlanRow[]): string {
  const base = rows[0]?.msPerMember ?? NaN;
  const head = [
    'members',
    'median ms',
    'µs/member',
    'per member vs first',
    'CPU ms',
    'runs',
    'JSON MiB',
    'one read ms',
    'plan in reads',
  ];
  const cells = rows.map((r) => [
    r.members.toLocaleString('en-US'),
    r.medianMs.toFixed(3),
    (r.msPerMember * 1000).toFixed(2),
    `${(r.msPerMember / base).toFixed(2)}×`,
    r.cpuMs.toFixed(3),
    String(r.runs),
    r.objectsMiB.toFixed(1),
    r.readOnceMs.toFixed(3),
    (r.medianMs / r.readOnceMs).toFixed(1),
  ]);
  const table = `${aligned(head, cells, () => true)}\nlast-level CPU cache: ${lastLevelCache() ?? 'not reported'}`;
  const g = planGrowth(rows);
  return g === undefined
    ? table
    : `${table}\nper member at 10,000 / at 1,000: CPU ${g.cpu.toFixed(2)}× (goal ≤ 1.3×: ${g.cpu <= 1.3 ? 'PASS' : 'FAIL'}), wall ${g.wall.toFixed(2)}×; one read of every object (the memory floor) ${g.floor.toFixed(2)}×`;
}

/**
 * Per-member cost at 10,000 members over that at 1,000 (1.00× is linear), when both were measured:
 * by CPU time (what the goal judges: on a shared machine a call's wall time also holds the time other
 * processes had the CPU; the median of the rounds' pairs where {@link planBench} timed rounds), by
 * wall time, and that of one bare read of every object (`floor`, wall: what the memory alone adds),
 * with how many such reads a plan costs at each size.
 */
export function planGrowth(rows: readonly PlanRow[]):
  | {
      readonly cpu: number;
      readonly wall: number;
      readonly floor: number;
      readonly reads: readonly [number, number];
    }
  | undefined {
  const [small, large] = [1_000, 10_000].map((n) => rows.find((r) => r.members === n));
  if (small === undefined || large === undefined) return undefined;
  const pairs = (large.cpuByRound ?? []).flatMap((l, i) => {
    const s = small.cpuByRound?.[i];
    return s === undefined ? [] : [l / large.members / (s / small.members)];
  });
  return {
    cpu:
      pairs.length > 0
        ? median(pairs)
        : large.cpuMs / large.members / (small.cpuMs / small.members),
    wall: large.msPerMember / small.msPerMember,
    floor: large.readOnceMs / large.members / (small.readOnceMs / small.members),
    reads: [small.medianMs / small.readOnceMs, large.medianMs / large.readOnceMs],
  };
}

/**
 * Where `plan()`'s time goes by size: the functions with the most self time at the largest size,
 * in ms per call at each size and per member relative to the smallest size (1.00× is linear).
 */
export async function planProfile(sizes: readonly number[], top = 12): Promise<string> {
  const profiles: Array<Map<string, number>> = [];
  for (const members of sizes) {
    const obs = asRead(convergedPool(members));
    const rand = seededRandom(1);
    for (let i = 0; i < 3; i++) plan(obs, NOW, rand);
    // About two seconds of work per size.
    const runs = Math.max(10, Math.round(2_000_000 / (members * 5)));
    const self = await profileSelfTime(() => plan(obs, NOW, rand), runs);
    profiles.push(new Map(self.map((s) => [s.fn, s.ms])));
  }
  const first = profiles[0] ?? new Map<string, number>();
  const last = profiles.at(-1) ?? new Map<string, number>();
  const [small = 1, large = 1] = [sizes[0], sizes.at(-1)];
  const head = [
    'function',
    ...sizes.map((n) => `ms at ${n.toLocaleString('en-US')}`),
    'per member',
  ];
  const rows = [...last.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([fn, ms]) => {
      const base = first.get(fn);
      const growth =
        base === undefined || base === 0 ? '' : `${(ms / large / (base / small) || 0).toFixed(2)}×`;
      return [fn, ...profiles.map((p) => (p.get(fn) ?? 0).toFixed(3)), growth];
    });
  return aligned(head, rows, (i) => i > 0);
}

/** What `--json` prints: the figures the bench records, from the process that measured them. */
export interface PlanFigures {
  readonly plan: PlanRow[];
  readonly scaleDown: ScaleDownRow;
  /** {@link planProfile} at 1,000 and 10,000 members. */
  readonly profile: string;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const sizes = process.argv.slice(2).map(Number).filter(Number.isFinite);
  if (process.argv.includes('--json')) {
    const figures: PlanFigures = {
      plan: planBench(),
      scaleDown: scaleDownBench(),
      profile: await planProfile([1_000, 10_000]),
    };
    console.log(JSON.stringify(figures));
  } else if (process.argv.includes('--profile'))
    console.log(await planProfile(sizes.length > 0 ? sizes : [1_000, 10_000]));
  else console.log(planTable(planBench(sizes.length > 0 ? { sizes } : {})));
}
