/**
 * Benchmark 4, cold start: spawn of a reconcile-pool process → its answer to the first CloudEvent,
 * and its peak RSS, for the esbuild bundle (scripts/build.ts) and for the same code with its
 * node_modules left external (what an unbundled image resolves at start).
 * @module
 */
import { pingInit } from '../local/events.js';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { build } from 'esbuild';
import { buildBundles, ROOT } from '../scripts/build.js';
import { median } from './objects.js';

/** One variant's figures (medians over the repetitions). */
export interface ColdStart {
  readonly variant: 'bundled' | 'unbundled';
  readonly bytes: number;
  readonly firstEventMs: number;
  readonly listeningMs: number;
  readonly peakRssMiB: number;
  readonly samples: number[];
}

function peakRss(pid: number): number {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/^VmHWM:\s+(\d+)/m.exec(s)?.[1] ?? 0) / 1024);
}

/** One start: spawn, wait for `listening`, POST a ping, time the answer. */
async function startOnce(file: string, kubeconfig: string, namespace: string) {
  const t0 = performance.now();
  // The runtime flags of the image (Containerfile, knative/): a small young generation.
  const child = spawn(process.execPath, ['--max-semi-space-size=1', file], {
    env: { PATH: process.env.PATH, KUBECONFIG: kubeconfig, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`${file}: no "listening" line in 20 s`));
      }, 20_000);
      child.on('exit', (code) => {
        reject(new Error(`${file} exited with ${String(code)}`));
      });
      for (const stream of [child.stdout, child.stderr]) {
        createInterface({ input: stream }).on('line', (line) => {
          if (!line.includes('listening')) return;
          try {
            const rec = JSON.parse(line) as { port?: number };
            if (typeof rec.port === 'number') {
              clearTimeout(timer);
              resolve(rec.port);
            }
          } catch {
            // not our line
          }
        });
      }
    });
    const listeningMs = performance.now() - t0;
    const res = await fetch(`http://127.0.0.1:${port}/`, {
      ...pingInit({ namespace }, '/bench/cold-start'),
      signal: AbortSignal.timeout(20_000),
    });
    await res.arrayBuffer();
    const firstEventMs = performance.now() - t0;
    if (res.status >= 300) throw new Error(`${file}: first event answered ${res.status}`);
    return { listeningMs, firstEventMs, rss: peakRss(child.pid ?? 0) };
  } finally {
    child.kill('SIGKILL');
  }
}

/** Builds both variants into bench-results/build and starts each `reps` times, alternating. */
export async function coldStart(
  kubeconfig: string,
  namespace: string,
  reps: number,
): Promise<ColdStart[]> {
  const dir = join(ROOT, 'bench-results', 'build');
  mkdirSync(dir, { recursive: true });
  const [bundle] = (await buildBundles({ outdir: join(dir, 'bundled'), report: false })).filter(
    (b) => b.name === 'reconcile-pool',
  );
  if (bundle === undefined) throw new Error('no reconcile-pool bundle');
  // Inside the repository, so the external packages resolve from its node_modules.
  const unbundled = join(dir, 'unbundled', 'reconcile-pool.mjs');
  await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, 'functions', 'reconcile-pool', 'main.ts')],
    outfile: unbundled,
    bundle: true,
    packages: 'external',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
  const variants = [
    { variant: 'bundled' as const, file: bundle.file },
    { variant: 'unbundled' as const, file: unbundled },
  ];
  const samples = new Map<
    string,
    Array<{ listeningMs: number; firstEventMs: number; rss: number }>
  >();
  // One warm-up each: the first spawn pays for the page cache, which a running node already has.
  for (const v of variants) await startOnce(v.file, kubeconfig, namespace);
  for (let i = 0; i < reps; i++)
    for (const v of variants)
      samples.set(v.variant, [
        ...(samples.get(v.variant) ?? []),
        await startOnce(v.file, kubeconfig, namespace),
      ]);
  return variants.map((v) => {
    const s = samples.get(v.variant) ?? [];
    return {
      variant: v.variant,
      bytes: statSync(v.file).size,
      firstEventMs: median(s.map((x) => x.firstEventMs)),
      listeningMs: median(s.map((x) => x.listeningMs)),
      peakRssMiB: median(s.map((x) => x.rss)),
      samples: s.map((x) => Math.round(x.firstEventMs)),
    };
  });
}
