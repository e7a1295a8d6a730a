/**
 * `npm run bench [-- --quick]`: starts the real control plane and measures scale-up, replacement
 * latency, API cost, cold start and disk GC side by side in one run; prints a table with goals and
 * writes bench-results/latest.json and bench-results/latest.svg.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../scripts/build.js';
import { PARALLEL } from '../shared/reconcile/index.js';
import { coldStart } from './coldstart.js';
import type { ColdStart } from './coldstart.js';
import { EVENTS_NS, apiCost, eventsPerAction, meetsFormula } from './cost.js';
import { gcTick } from './gc.js';
import type { GcResult } from './gc.js';
import { median, percentile } from './objects.js';
import { REPLICASET_KCM_FLAGS, startBenchPlane } from './plane.js';
import { REPLACE_NS, REPLACE_REPLICAS, replacement } from './replace.js';
import type { Row } from './report.js';
import { chart, table } from './report.js';
import { scaleNamespaces, scaleUp } from './scaleup.js';
import type { ScaleRun } from './scaleup.js';
import { startStack } from './stack.js';
import type { StandbyRun } from './standby.js';
import { standbyBench, standbyNamespaces, standbyRows } from './standby.js';
import type { BenchPlane } from './plane.js';

const quick = process.argv.includes('--quick');
const cfg = quick
  ? { sizes: [50], reps: 2, trials: 50, coldReps: 3, standbyScale: 0.1 }
  : { sizes: [50, 200], reps: 3, trials: 100, coldReps: 7, standbyScale: 0.25 };
/** `--skip=gc,cold,standby` leaves benchmarks out (for working on one); the table lacks their rows. */
const skip = new Set(
  (process.argv.find((a) => a.startsWith('--skip='))?.slice('--skip='.length) ?? '').split(','),
);
/** `--only=standby` runs the standby benchmark alone. */
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const log = (l: string): void => {
  console.error(`[bench] ${l}`);
};
const ms = (x: number): string => `${Math.round(x)} ms`;

function gitRev(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
  } catch {
    return 'unknown';
  }
}

/** The standby benchmark alone (`--only=standby`): its rows printed, nothing recorded. */
async function standbyOnly(plane: BenchPlane): Promise<void> {
  const stack = await startStack(
    plane.kc,
    plane.cp.kubeconfigPath,
    plane.knativeBinDir,
    standbyNamespaces(cfg.reps),
  );
  try {
    console.log(
      table(standbyRows(await standbyBench(plane, stack, cfg.reps, cfg.standbyScale, log))),
    );
  } finally {
    await stack.stop();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const plane = await startBenchPlane(log);
  if (only === 'standby') {
    await standbyOnly(plane).finally(() => plane.stop());
    return;
  }
  try {
    let gc: GcResult | undefined;
    if (!skip.has('gc')) {
      log('disk-gc-tick: creating 500 pools and 2000 disks');
      gc = await gcTick(plane, 500, 4);
      log(`disk-gc-tick: ${ms(gc.first.ms)}, ${gc.first.lists} lists, ${gc.first.deleted} deleted`);
    }
    let cold: ColdStart[] = [];
    if (!skip.has('cold')) {
      log('cold start');
      cold = await coldStart(plane.cp.kubeconfigPath, 'bench-cold', cfg.coldReps);
    }

    const namespaces = [
      ...cfg.sizes.flatMap((n) => scaleNamespaces(n, cfg.reps)),
      REPLACE_NS,
      EVENTS_NS,
      ...(skip.has('standby') ? [] : standbyNamespaces(cfg.reps)),
    ];
    const stack = await startStack(
      plane.kc,
      plane.cp.kubeconfigPath,
      plane.knativeBinDir,
      namespaces,
    );
    const scale = new Map<number, ScaleRun[]>();
    let latency;
    let actions;
    let standby: StandbyRun[] = [];
    try {
      for (const n of cfg.sizes) scale.set(n, await scaleUp(plane, stack, n, cfg.reps, log));
      latency = await replacement(plane, stack, cfg.trials, log);
      actions = await eventsPerAction(plane, stack);
      if (!skip.has('standby'))
        standby = await standbyBench(plane, stack, cfg.reps, cfg.standbyScale, log);
    } finally {
      await stack.stop();
    }
    const cost = await apiCost(plane);
    const memory = plane.cp.memory();

    const rows: Row[] = [];
    const scaleSummary = cfg.sizes.map((n) => {
      const runs = scale.get(n) ?? [];
      const s = {
        n,
        vmpool: median(runs.map((r) => r.vmpool)),
        raw: median(runs.map((r) => r.raw)),
        replicaSet: median(runs.map((r) => r.replicaSet)),
        events: median(runs.map((r) => r.events)),
        requests: median(runs.map((r) => r.requests)),
      };
      const ratio = s.vmpool / s.raw;
      rows.push(
        {
          bench: `1 scale-up N=${n}`,
          figure: `vmpool (${3 * n} objects)`,
          value: ms(s.vmpool),
          goal: '',
        },
        { bench: '', figure: `raw loop, ${PARALLEL} in flight`, value: ms(s.raw), goal: '' },
        { bench: '', figure: `ReplicaSet (${n} pods)`, value: ms(s.replicaSet), goal: '' },
        {
          bench: '',
          figure: 'vmpool / raw',
          value: `${ratio.toFixed(2)}×`,
          goal: '≤ 1.25×',
          pass: ratio <= 1.25,
        },
        {
          bench: '',
          figure: 'vmpool / ReplicaSet',
          value: `${(s.vmpool / s.replicaSet).toFixed(2)}×`,
          goal: '< 1×',
          pass: s.vmpool < s.replicaSet,
        },
        {
          bench: '',
          figure: 'events, requests during scale-up',
          value: `${s.events}, ${s.requests}`,
          goal: '',
        },
      );
      return s;
    });
    const pct = (xs: number[]) => ({
      p50: percentile(xs, 50),
      p95: percentile(xs, 95),
      p99: percentile(xs, 99),
    });
    const lat = { vmpool: pct(latency.vmpool), replicaSet: pct(latency.replicaSet) };
    rows.push(
      {
        bench: `2 replacement (${cfg.trials} trials)`,
        figure: 'vmpool p50',
        value: ms(lat.vmpool.p50),
        goal: '≤ 150 ms',
        pass: lat.vmpool.p50 <= 150,
      },
      { bench: '', figure: 'vmpool p95', value: ms(lat.vmpool.p95), goal: '' },
      {
        bench: '',
        figure: 'vmpool p99',
        value: ms(lat.vmpool.p99),
        goal: '≤ 500 ms',
        pass: lat.vmpool.p99 <= 500,
      },
      {
        bench: '',
        figure: 'ReplicaSet p50 / p95 / p99',
        value: `${Math.round(lat.replicaSet.p50)} / ${Math.round(lat.replicaSet.p95)} / ${Math.round(lat.replicaSet.p99)} ms`,
        goal: '',
      },
    );
    for (const c of cost) {
      const verbs = Object.entries(c.byVerb)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      const noop = c.scenario === 'no-op';
      const formula = meetsFormula(c);
      rows.push({
        bench: noop ? '3 API cost per reconcile' : '',
        figure: `${c.scenario}${c.reconciles > 1 ? ` (${c.reconciles} reconciles)` : ''}`,
        value: `${c.reads} reads, ${c.writes - c.events} writes + ${c.events} Events (${verbs})`,
        goal: noop ? '≤ 3 reads, 0 writes' : (c.formula?.text ?? ''),
        ...(noop ? { pass: c.reads <= 3 && c.writes === 0 } : {}),
        ...(formula === undefined ? {} : { pass: formula }),
      });
    }
    for (const a of actions)
      rows.push({
        bench: '',
        figure: `user action: ${a.action}`,
        value: `${a.events} events, ${a.requests} requests (${a.writes} writes)`,
        goal: '',
      });
    const b = cold.find((c) => c.variant === 'bundled');
    const u = cold.find((c) => c.variant === 'unbundled');
    if (b !== undefined && u !== undefined)
      rows.push(
        {
          bench: '4 cold start (median)',
          figure: `bundled ${(b.bytes / 1024).toFixed(0)} KiB: start → first event`,
          value: ms(b.firstEventMs),
          goal: '≤ 250 ms',
          pass: b.firstEventMs <= 250,
        },
        {
          bench: '',
          figure: 'bundled peak RSS',
          value: `${b.peakRssMiB} MiB`,
          goal: '≤ 90 MB',
          pass: b.peakRssMiB * 1.048576 <= 90,
        },
        {
          bench: '',
          figure: 'unbundled: start → first event, RSS',
          value: `${Math.round(u.firstEventMs)} ms, ${u.peakRssMiB} MiB`,
          goal: '',
        },
      );
    const pages = (n: number) => Math.max(1, Math.ceil(n / 500));
    if (gc !== undefined) {
      const expectedLists = pages(gc.disks) + pages(gc.pools) + 1;
      rows.push(
        {
          bench: `5 disk-gc-tick ${gc.pools} pools, ${gc.disks} disks`,
          figure: `pass deleting ${gc.first.deleted}`,
          value: ms(gc.first.ms),
          goal: '≤ 2 s',
          pass: gc.first.ms <= 2000,
        },
        {
          bench: '',
          figure: 'list requests (3 collections, pages of 500)',
          value: String(gc.first.lists),
          goal: `≤ ${expectedLists}, not per pool`,
          pass: gc.first.lists <= expectedLists,
        },
        {
          bench: '',
          figure: 'pass with nothing to collect',
          value: ms(gc.second.ms),
          goal: '≤ 2 s',
          pass: gc.second.ms <= 2000,
        },
      );
    }

    if (standby.length > 0) rows.push(...standbyRows(standby));
    const text = table(rows);
    console.log(text);
    console.log(`\nReplicaSet controller manager: ${REPLICASET_KCM_FLAGS.join(' ')}`);
    const env = `${cpus().length} CPUs, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}, ${gitRev()}, ${quick ? 'quick' : 'full'}`;
    console.log(`Environment: ${env}; total ${Math.round((Date.now() - started) / 1000)} s`);

    const out = join(ROOT, 'bench-results');
    mkdirSync(out, { recursive: true });
    const record = {
      when: new Date().toISOString(),
      mode: quick ? 'quick' : 'full',
      env,
      replicaSetKcmFlags: REPLICASET_KCM_FLAGS,
      parallel: PARALLEL,
      scaleUp: { summary: scaleSummary, runs: Object.fromEntries(scale) },
      replacement: { replicas: REPLACE_REPLICAS, percentiles: lat, samples: latency },
      apiCost: cost,
      eventsPerAction: actions,
      coldStart: cold,
      gc,
      standby,
      controlPlaneMemory: memory,
      table: rows,
    };
    writeFileSync(join(out, 'latest.json'), `${JSON.stringify(record, null, 2)}\n`);
    const svg = chart(
      scaleSummary.map((s) => ({
        label: `N=${s.n}`,
        bars: [
          { name: 'vmpool', value: s.vmpool },
          { name: 'raw loop', value: s.raw },
          { name: 'ReplicaSet', value: s.replicaSet },
        ],
      })),
      (['p50', 'p95', 'p99'] as const).map((p) => ({
        label: p,
        bars: [
          { name: 'vmpool', value: lat.vmpool[p] },
          { name: 'ReplicaSet', value: lat.replicaSet[p] },
        ],
      })),
      env,
    );
    writeFileSync(join(out, 'latest.svg'), svg);
    log('wrote bench-results/latest.json and bench-results/latest.svg');
  } finally {
    await plane.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exitCode = 1;
});
