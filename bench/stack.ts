/**
 * reconcile-pool as deployed: its own process, started as the image starts it (its snapshot, its
 * flags; see ticks.ts), fed by the real ApiServerSource adapter as knative/ configures it (pools;
 * VMs and disks with a pool-uid label) in Resource mode for the benchmark's namespaces, through a
 * stand-in Broker in this process (broker.ts) — the wiring of test/e2e/stack.ts without vitest, the
 * simulator or a resync tick (every reaction measured is event-driven). Counts deliveries, reads the
 * function's API requests from its /metrics, and knows when it is idle.
 * @module
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../shared/http/index.js';
import type { RequestCounts } from '../shared/kube/index.js';
import { ROOT } from '../scripts/build.js';
import { startPoolSources } from '../local/controlplane/adapter.js';
import { testLog } from '../test/logs.js';
import { startBroker } from './broker.js';
import type { Mark } from './broker.js';
import { listeningPort, requestsByVerb } from './ticks.js';
import type { Start } from './ticks.js';

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
  /** CloudEvents the Broker took in and its Trigger's filters dropped so far. */
  filtered(): number;
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
  const broker = await startBroker(fn);
  const adapters = await startPoolSources({
    kubeconfigPath,
    binDir: knativeBinDir,
    sink: broker.sink,
    namespaces,
    name: 'bench',
  });
  const metrics = async () => (await fetch(`${fn}/metrics`)).text();
  return {
    functionPid: child.pid ?? 0,
    adapterPids: adapters.map((a) => a.pid),
    marks: (since) => broker.marks.filter((m) => m.at >= since),
    delivered: () => broker.delivered(),
    filtered: () => broker.filtered(),
    redelivered: () => broker.redelivered(),
    counts: async () => requestsByVerb(await metrics()),
    metrics,
    async idle(quietMs = 300, timeoutMs = 60_000) {
      const since = performance.now();
      const deadline = since + timeoutMs;
      // Quiet since the call too: an action's first event may not have arrived yet.
      while (
        broker.inFlight() > 0 ||
        performance.now() - Math.max(broker.lastDone(), since) < quietMs
      ) {
        if (performance.now() > deadline) throw new Error('reconcile-pool never went idle');
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    stop: async () => {
      await Promise.all(adapters.map((a) => a.stop()));
      await broker.close();
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
