/**
 * Benchmark 4b, the resync tick at scale: 1,000 pools of one replica (+2 disks) converged, then
 * PingSource ticks over the whole cluster delivered to the bundled reconcile-pool in its own
 * process, as deployed: its API requests by verb (from its /metrics), the tick's time and the
 * process's peak RSS.
 * @module
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pingInit } from '../local/events.js';
import { createKube } from '../shared/kube/index.js';
import { reconcilePool, runBounded } from '../shared/reconcile/index.js';
import type { BenchPlane } from './plane.js';
import { benchPool, clients } from './objects.js';
import { silentLog } from './stack.js';

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
  /** List pages a tick needs at 500 per page: pools + VMs + disks. */
  readonly expectedLists: number;
  readonly peakRssMiB: number;
}

const READS = new Set(['get', 'list']);

/** `vmpool_api_requests_total` by verb, from a Prometheus text page. */
export function requestsByVerb(page: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of page.matchAll(/^vmpool_api_requests_total\{([^}]*)\} (\d+)/gm)) {
    const verb = /verb="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '';
    out[verb] = (out[verb] ?? 0) + Number(m[2]);
  }
  return out;
}

const minus = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(a)
      .map(([k, v]) => [k, v - (b[k] ?? 0)] as const)
      .filter(([, v]) => v > 0),
  );

/** Sets up `pools` pools of `replicas`, converges them, then times `ticks` resync ticks. */
export async function resyncTick(
  plane: BenchPlane,
  bundle: string,
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

  const child = spawn(process.execPath, ['--max-semi-space-size=1', bundle], {
    env: {
      PATH: process.env.PATH,
      KUBECONFIG: plane.cp.kubeconfigPath,
      PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error('reconcile-pool: no "listening" line in 20 s'));
      }, 20_000);
      child.on('exit', (code) => {
        reject(new Error(`reconcile-pool exited with ${String(code)}`));
      });
      for (const stream of [child.stdout, child.stderr])
        createInterface({ input: stream }).on('line', (line) => {
          const m = /"port":(\d+)/.exec(line);
          if (m !== null && line.includes('listening')) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
    });
    const base = `http://127.0.0.1:${port}`;
    const metrics = async () => requestsByVerb(await (await fetch(`${base}/metrics`)).text());
    const tickMs: number[] = [];
    let requests: Record<string, number> = {};
    for (let i = 0; i < ticks; i++) {
      const before = await metrics();
      const s = performance.now();
      const res = await fetch(`${base}/`, {
        ...pingInit({}, '/bench/resync'),
        signal: AbortSignal.timeout(120_000),
      });
      await res.arrayBuffer();
      tickMs.push(performance.now() - s);
      if (res.status >= 300) throw new Error(`resync tick answered ${res.status}`);
      requests = minus(await metrics(), before);
      log(
        `resync tick ${i + 1}/${ticks}: ${(tickMs.at(-1) ?? 0).toFixed(0)} ms, ${JSON.stringify(requests)}`,
      );
    }
    const status = readFileSync(`/proc/${child.pid ?? 0}/status`, 'utf8');
    const peakRssMiB = Math.round(Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 1024);
    let lists = 0;
    let writes = 0;
    for (const [verb, n] of Object.entries(requests)) {
      if (verb === 'list') lists += n;
      if (!READS.has(verb)) writes += n;
    }
    const pages = (n: number) => Math.max(1, Math.ceil(n / 500));
    return {
      pools,
      replicas,
      setupMs,
      convergeMs,
      tickMs,
      requests,
      lists,
      writes,
      expectedLists: pages(pools) + pages(pools * replicas) + pages(pools * replicas * 2),
      peakRssMiB,
    };
  } finally {
    child.kill('SIGKILL');
  }
}
