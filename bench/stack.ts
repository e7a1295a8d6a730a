/**
 * reconcile-pool as deployed: its own process, started as the image starts it (its snapshot, its
 * flags; see ticks.ts), fed by the real ApiServerSource adapter as knative/ configures it (pools;
 * VMs and disks with a pool-uid label) in Resource mode for the benchmark's namespaces, through a
 * simulated Broker in this process — the wiring of test/e2e/stack.ts without vitest, the simulator
 * or a resync tick (every reaction measured is event-driven). Counts deliveries, reads the
 * function's API requests from its /metrics, and knows when it is idle.
 * @module
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { serveApp } from '../shared/http/index.js';
import type { Logger } from '../shared/http/index.js';
import type { RequestCounts } from '../shared/kube/index.js';
import { ROOT } from '../scripts/build.js';
import { startPoolSources } from '../local/controlplane/adapter.js';
import { testLog } from '../test/logs.js';
import { listeningPort, requestsByVerb } from './ticks.js';
import type { Start } from './ticks.js';

/** A moment of a delivery: the Broker sent an event (`delivered`), or the function answered it. */
export interface Mark {
  readonly at: number;
  readonly what: 'delivered' | 'answered';
  /** The event's number (first deliveries counted from 1), shared by its redeliveries. */
  readonly event: number;
}

/** A running reconcile-pool with its event sources. */
export interface Stack {
  /** Process id of reconcile-pool (for CPU accounting and placement). */
  readonly functionPid: number;
  /** Process ids of the adapters (for CPU accounting). */
  readonly adapterPids: readonly number[];
  /** Deliveries sent and answered since `since` (performance.now()), in order. */
  marks(since: number): Mark[];
  /** CloudEvents delivered so far (first deliveries). */
  delivered(): number;
  /** Redeliveries after a 5xx/409/429 answer so far. */
  redelivered(): number;
  /** The function's API requests by verb so far (`vmpool_api_requests_total` of its /metrics). */
  counts(): Promise<RequestCounts>;
  /** The function's /metrics page. */
  metrics(): Promise<string>;
  /** Resolves once no delivery has been in flight for `quietMs`. */
  idle(quietMs?: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** A logger that drops everything (a benchmark must not measure its own logging). */
export function silentLog(name: string): Logger {
  return testLog(name, process.env.BENCH_LOG || 'silent');
}

/** Where BENCH_PROFILE=1 has reconcile-pool write its CPU profile (whole life, at its exit). */
export const FUNCTION_PROFILE_DIR = join(ROOT, 'bench-results', 'profile-reconcile-pool');

/** Headers of a CloudEvent in binary mode that the Broker passes on (Knative's dispatcher does). */
const forwarded = (h: Headers): Headers => {
  const out = new Headers();
  for (const [k, v] of h)
    if (k === 'content-type' || k.startsWith('ce-') || k === 'traceparent') out.set(k, v);
  return out;
};

/**
 * Starts reconcile-pool (`start`, from ticks.ts's imageStarts) with `kubeconfigPath` and the
 * adapters for `namespaces`.
 */
export async function startStack(
  kubeconfigPath: string,
  knativeBinDir: string,
  namespaces: string[],
  start: Start,
): Promise<Stack> {
  const profile = process.env.BENCH_PROFILE
    ? ['--cpu-prof', `--cpu-prof-dir=${FUNCTION_PROFILE_DIR}`]
    : [];
  if (profile.length > 0) mkdirSync(FUNCTION_PROFILE_DIR, { recursive: true });
  const child = spawn(process.execPath, [...profile, ...start.args], {
    env: {
      ...start.env,
      PATH: process.env.PATH,
      KUBECONFIG: kubeconfigPath,
      PORT: '0',
      LOG_LEVEL: process.env.BENCH_LOG || 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(start.cwd === undefined ? {} : { cwd: start.cwd }),
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  let fn: string;
  try {
    fn = `http://127.0.0.1:${await listeningPort(child, 'reconcile-pool')}`;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const marks: Mark[] = [];
  let delivered = 0;
  let redelivered = 0;
  let inFlight = 0;
  let lastDone = performance.now();
  // Plays the Broker of knative/base/eventing.yaml: its ingress accepts each event from the adapter
  // at once (202), and its Trigger's dispatcher delivers to reconcile-pool over HTTP, concurrently,
  // redelivering on 5xx, 409 and 429 with exponential backoff (5 retries from 100 ms, as the
  // Trigger's delivery spec is configured). Without it, the adapter's direct sink would send one
  // event at a time and wait for each reconcile, which no deployment of vmpool does.
  const dispatch = async (headers: Headers, body: ArrayBuffer): Promise<void> => {
    const event = ++delivered;
    inFlight++;
    try {
      for (let attempt = 0; ; attempt++) {
        marks.push({ at: performance.now(), what: 'delivered', event });
        let status: number;
        try {
          const res = await fetch(`${fn}/`, { method: 'POST', headers, body });
          await res.arrayBuffer();
          status = res.status;
        } catch {
          status = 503; // No answer: the dispatcher retries it like a 5xx.
        }
        marks.push({ at: performance.now(), what: 'answered', event });
        const again = status >= 500 || status === 409 || status === 429;
        if (!again || attempt >= 5) return;
        redelivered++;
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
      }
    } finally {
      inFlight--;
      lastDone = performance.now();
    }
  };
  const served = serveApp(
    {
      fetch: async (req: Request) => {
        const body = await req.arrayBuffer();
        void dispatch(forwarded(req.headers), body);
        return new Response(null, { status: 202 });
      },
    },
    { port: 0, hostname: '127.0.0.1', handleSignals: false },
  );
  const sink = `http://127.0.0.1:${(await served.listening).port}/`;
  const adapters = await startPoolSources({
    kubeconfigPath,
    binDir: knativeBinDir,
    sink,
    namespaces,
    name: 'bench',
  });
  const metrics = async () => (await fetch(`${fn}/metrics`)).text();
  return {
    functionPid: child.pid ?? 0,
    adapterPids: adapters.map((a) => a.pid),
    marks: (since) => marks.filter((m) => m.at >= since),
    delivered: () => delivered,
    redelivered: () => redelivered,
    counts: async () => requestsByVerb(await metrics()),
    metrics,
    async idle(quietMs = 300, timeoutMs = 60_000) {
      const since = performance.now();
      const deadline = since + timeoutMs;
      // Quiet since the call too: an action's first event may not have arrived yet.
      while (inFlight > 0 || performance.now() - Math.max(lastDone, since) < quietMs) {
        if (performance.now() > deadline) throw new Error('reconcile-pool never went idle');
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    stop: async () => {
      await Promise.all(adapters.map((a) => a.stop()));
      await served.close();
      // SIGTERM drains and ends it (node writes a --cpu-prof profile then); 10 s at most.
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
      }, 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
