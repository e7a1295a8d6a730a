/**
 * Benchmark 6, warm standby: the time from a `/scale` write of +10 to 10 more Running replicas,
 * without a standby and with a standby of 10 (Stopped, then Running), beside the platform simulator
 * set to provision a disk in 20 s and boot a VM in 5 s, both scaled down so a run takes seconds
 * (the ratio is what counts; the simulator's own passes add a little to every variant). Every run
 * goes through the real adapter and reconcile-pool.
 * @module
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Watch } from '@kubernetes/client-node';
import { GROUP, VERSION, keys } from '../shared/api/index.js';
import { startSimulator } from '../local/simulator/simulator.js';
import type { BenchPlane } from './plane.js';
import { benchPool, clients, median } from './objects.js';
import type { Row } from './report.js';
import type { Stack } from './stack.js';

/** The platform's times the benchmark models (ms), before scaling. */
export const PLATFORM = { provisioningMs: 20_000, bootMs: 5_000 } as const;
const BASE = 2;
const STEP = 10;

/** The three variants, each in a namespace of its own per repetition. */
export const VARIANTS = ['none', 'Stopped', 'Running'] as const;
export type Variant = (typeof VARIANTS)[number];

/** Namespaces the stack's adapters must watch for {@link standbyBench}. */
export const standbyNamespaces = (reps: number): string[] =>
  VARIANTS.flatMap((v) =>
    Array.from({ length: reps }, (_, r) => `bench-standby-${v.toLowerCase()}-${r}`),
  );

/** Times (ms) of one variant: to 10 more Running replicas, and until the standby is full again. */
export interface StandbyRun {
  readonly variant: Variant;
  /** The factor the platform's times ran at. */
  readonly scale: number;
  readonly runningMs: number;
  readonly refilledMs: number;
}

interface Member {
  readonly standby: boolean;
  readonly phase?: string;
}

/** A watch of one namespace's VMs by name: standby or not, and phase. */
async function watchMembers(kc: KubeConfig, ns: string) {
  const members = new Map<string, Member>();
  const waiters = new Set<() => void>();
  type Seen = {
    metadata: { name: string; labels?: Record<string, string> };
    status?: { phase?: string };
  };
  const ctl = await new Watch(kc).watch(
    `/apis/${GROUP}/${VERSION}/namespaces/${ns}/virtualmachines`,
    {},
    (type: string, o: Seen) => {
      if (type === 'DELETED') members.delete(o.metadata.name);
      else
        members.set(o.metadata.name, {
          standby: o.metadata.labels?.[keys.standby] === 'true',
          ...(o.status?.phase === undefined ? {} : { phase: o.status.phase }),
        });
      for (const w of waiters) w();
    },
    () => undefined,
  );
  const count = (standby: boolean, phase: string): number =>
    [...members.values()].filter((m) => m.standby === standby && m.phase === phase).length;
  return {
    count,
    /** Resolves (performance.now()) once `test` holds, checked on every event. */
    until(test: () => boolean, timeoutMs = 600_000): Promise<number> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`standby bench: timed out in ${ns}`));
        }, timeoutMs);
        const check = (): void => {
          if (!test()) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(performance.now());
        };
        waiters.add(check);
        check();
      });
    },
    stop: () => {
      ctl.abort();
    },
  };
}

/** One run: a pool of 2 (and its standby) settled, then +10. */
async function once(
  plane: BenchPlane,
  stack: Stack,
  ns: string,
  variant: Variant,
  scale: number,
): Promise<StandbyRun> {
  const c = clients(plane.kc);
  await c.namespace(ns);
  const sim = startSimulator({
    kubeconfigPath: plane.cp.kubeconfigPath,
    namespace: ns,
    intervalMs: 50,
    delays: {
      diskReady: PLATFORM.provisioningMs * scale,
      vmStarting: PLATFORM.bootMs * scale,
      vmPending: 100,
      vmStopping: 100,
      vmTerminating: 300,
    },
  });
  const watch = await watchMembers(plane.kc, ns);
  try {
    const pool = benchPool(ns, 'p', BASE);
    const spare = variant === 'none' ? 0 : STEP;
    const phase = variant === 'Running' ? 'Running' : 'Stopped';
    if (variant !== 'none')
      Object.assign(pool.spec, { standby: { replicas: STEP, state: variant } });
    await c.createPool(pool);
    await watch.until(
      () => watch.count(false, 'Running') === BASE && watch.count(true, phase) === spare,
    );
    await stack.idle();
    const t0 = performance.now();
    await c.scalePool(ns, 'p', BASE + STEP);
    const running = await watch.until(() => watch.count(false, 'Running') >= BASE + STEP);
    const refilled = await watch.until(() => watch.count(true, phase) >= spare);
    return { variant, scale, runningMs: running - t0, refilledMs: refilled - t0 };
  } finally {
    watch.stop();
    await sim.stop();
  }
}

/** `reps` repetitions of every variant, interleaved, the platform's times × `scale`. */
export async function standbyBench(
  plane: BenchPlane,
  stack: Stack,
  reps: number,
  scale: number,
  log: (l: string) => void,
): Promise<StandbyRun[]> {
  const runs: StandbyRun[] = [];
  for (let r = 0; r < reps; r++)
    for (const v of VARIANTS) {
      const run = await once(plane, stack, `bench-standby-${v.toLowerCase()}-${r}`, v, scale);
      log(
        `standby ${v} rep ${r + 1}/${reps}: 10 more Running in ${run.runningMs.toFixed(0)} ms, standby full again in ${run.refilledMs.toFixed(0)} ms`,
      );
      runs.push(run);
    }
  return runs;
}

/** The table rows: each variant's median, and its ratio to no standby, side by side. */
export function standbyRows(runs: readonly StandbyRun[]): Row[] {
  const of = (v: Variant, k: 'runningMs' | 'refilledMs') =>
    median(runs.filter((r) => r.variant === v).map((r) => r[k]));
  const none = of('none', 'runningMs');
  const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
  const scale = runs[0]?.scale ?? 1;
  const platform = `provisioning ${s(PLATFORM.provisioningMs * scale)}, boot ${s(PLATFORM.bootMs * scale)} (20 s and 5 s × ${String(scale)})`;
  return VARIANTS.map((v, i): Row => {
    const ms = of(v, 'runningMs');
    const ratio = none / ms;
    return {
      bench: i === 0 ? `8 standby: scale +${String(STEP)} to Running` : i === 1 ? platform : '',
      figure:
        v === 'none'
          ? 'no standby'
          : `standby ${String(STEP)} ${v} (refilled in ${s(of(v, 'refilledMs'))})`,
      value: v === 'none' ? s(ms) : `${s(ms)}, ${ratio.toFixed(1)}× faster`,
      goal: v === 'none' ? '' : '< no standby',
      ...(v === 'none' ? {} : { pass: ms < none }),
    };
  });
}
