/**
 * Benchmark 6, cold start: spawn of a reconcile-pool process → its answer to the first CloudEvent,
 * and its peak RSS, for the image's exact start (scripts/image-start.ts: its flags, its snapshot
 * built by this node as the image's build stage builds it, run from the image's layout) beside the
 * floor, and as context the bundle as the image started it before, node alone, and the same code
 * with its node_modules left external (what an unbundled image resolves at start).
 * @module
 */
import { pingInit } from '../local/events.js';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BANNER, buildBundles, ROOT } from '../scripts/build.js';
import { RUNTIME_ENV, RUNTIME_FLAGS, imageStart } from '../scripts/image-start.js';
import { buildSnapshot } from '../scripts/snapshot.js';
import { listeningPort, peakRss } from './ticks.js';
import { median } from './objects.js';

/** One variant's figures (medians over the repetitions). */
export interface ColdStart {
  readonly variant:
    | 'image: its start command, from the snapshot'
    | 'bundle, as the image started it before'
    | 'floor: node, TLS, kubeconfig, one list'
    | 'node alone: an HTTP server'
    | 'unbundled';
  readonly bytes: number;
  readonly firstEventMs: number;
  readonly listeningMs: number;
  readonly peakRssMiB: number;
  /** CPU time of the process until its first answer (all threads): less sensitive to load. */
  readonly cpuMs: number;
  readonly samples: number[];
}

/** CPU time the process has used so far in ms (/proc/<pid>/schedstat: ns on a CPU), all threads. */
function cpuMs(pid: number): number {
  let ns = 0;
  try {
    for (const t of readdirSync(`/proc/${pid}/task`))
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return NaN;
  }
  return ns / 1e6;
}

/** The runtime flags of the image (scripts/image-start.ts), which the floor runs with too. */
export const IMAGE_FLAGS = RUNTIME_FLAGS;

/** One start: spawn `node …args` in `cwd`, wait for `listening`, POST a ping, time the answer. */
export async function startOnce(
  args: readonly string[],
  kubeconfig: string,
  namespace: string,
  cwd?: string,
) {
  const file = args.at(-1) ?? '';
  const t0 = performance.now();
  const child = spawn(process.execPath, [...args], {
    ...(cwd === undefined ? {} : { cwd }),
    // Every variant in the image's environment, as each would run inside the image.
    env: { ...RUNTIME_ENV, PATH: process.env.PATH, KUBECONFIG: kubeconfig, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await listeningPort(child, file);
    const listeningMs = performance.now() - t0;
    const res = await fetch(`http://127.0.0.1:${port}/`, {
      ...pingInit({ namespace }, '/bench/cold-start'),
      signal: AbortSignal.timeout(20_000),
    });
    await res.arrayBuffer();
    const firstEventMs = performance.now() - t0;
    if (res.status >= 300) throw new Error(`${file}: first event answered ${res.status}`);
    const rss = peakRss(child.pid ?? 0);
    if (rss === undefined) throw new Error(`${file}: exited after its first event`);
    return {
      listeningMs,
      firstEventMs,
      rss,
      cpuMs: cpuMs(child.pid ?? 0),
    };
  } finally {
    child.kill('SIGKILL');
  }
}

/** Node's own start: an HTTP server that answers 202 at once (what no JavaScript of ours can undercut). */
const NODE_ALONE = `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(202).end()); }).listen(0, '127.0.0.1', function () { console.log(JSON.stringify({ msg: 'listening', port: this.address().port })); });`;

/** A variant: node's arguments (the file last) and its working directory. */
interface Variant {
  readonly variant: ColdStart['variant'];
  readonly args: readonly string[];
  readonly file: string;
  readonly cwd?: string;
}

/**
 * Builds the variants into bench-results/build — the bundle as shipped, the same code with its
 * node_modules external (what an unbundled image resolves at start), and the floor (bench/floor.ts)
 * — and starts each `reps` times, alternating.
 */
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
  const common = {
    absWorkingDir: ROOT,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  } as const;
  // Inside the repository, so the external packages resolve from its node_modules.
  const unbundled = join(dir, 'unbundled', 'reconcile-pool.mjs');
  await build({
    ...common,
    entryPoints: [join(ROOT, 'functions', 'reconcile-pool', 'main.ts')],
    outfile: unbundled,
    packages: 'external',
  });
  const floor = join(dir, 'floor', 'floor.mjs');
  await build({
    ...common,
    entryPoints: [join(ROOT, 'bench', 'floor.ts')],
    outfile: floor,
    minify: true,
    banner: { js: BANNER },
  });
  // The image's layout: its working directory holds dist/, where the build stage wrote the blob
  // with the node that runs it (here this node stands in for the image's /usr/local/bin/node).
  const image = join(dir, 'image');
  const snapshot = await buildSnapshot(join(image, 'dist'), 'reconcile-pool');
  const start = imageStart('reconcile-pool');
  const variants: Variant[] = [
    {
      variant: 'image: its start command, from the snapshot',
      args: [...start.command.slice(1), ...start.args],
      file: snapshot.blob,
      cwd: image,
    },
    {
      variant: 'floor: node, TLS, kubeconfig, one list',
      args: [...IMAGE_FLAGS, floor],
      file: floor,
    },
    // Until issue 26: `node --max-semi-space-size=1 dist/reconcile-pool.mjs`.
    {
      variant: 'bundle, as the image started it before',
      args: ['--max-semi-space-size=1', bundle.file],
      file: bundle.file,
    },
    {
      variant: 'node alone: an HTTP server',
      args: [...IMAGE_FLAGS, '-e', NODE_ALONE],
      file: floor,
    },
    { variant: 'unbundled', args: [...IMAGE_FLAGS, unbundled], file: unbundled },
  ];
  const samples = new Map<
    string,
    Array<{ listeningMs: number; firstEventMs: number; rss: number; cpuMs: number }>
  >();
  // One warm-up each: the first spawn pays for the page cache, which a running node already has.
  for (const v of variants) await startOnce(v.args, kubeconfig, namespace, v.cwd);
  for (let i = 0; i < reps; i++)
    for (const v of variants)
      samples.set(v.variant, [
        ...(samples.get(v.variant) ?? []),
        await startOnce(v.args, kubeconfig, namespace, v.cwd),
      ]);
  return variants.map((v) => {
    const s = samples.get(v.variant) ?? [];
    return {
      variant: v.variant,
      bytes: statSync(v.file).size,
      firstEventMs: median(s.map((x) => x.firstEventMs)),
      listeningMs: median(s.map((x) => x.listeningMs)),
      peakRssMiB: median(s.map((x) => x.rss)),
      cpuMs: median(s.map((x) => x.cpuMs)),
      samples: s.map((x) => Math.round(x.firstEventMs)),
    };
  });
}
