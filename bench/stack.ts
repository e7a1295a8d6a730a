/**
 * reconcile-pool as deployed: the hono app served over HTTP, fed by the real ApiServerSource adapter
 * as knative/ configures it (pools; VMs and disks with a pool-uid label) in Resource mode for the
 * benchmark's namespaces — the wiring
 * of test/e2e/stack.ts without vitest, the simulator or a resync tick (every reaction measured is
 * event-driven). Counts deliveries and API requests, and knows when it is idle.
 * @module
 */
import { buildReconcileApp } from '../functions/reconcile-pool/app.js';
import { serveApp } from '../shared/http/index.js';
import type { Logger } from '../shared/http/index.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { createKube } from '../shared/kube/index.js';
import type { Kube, RequestCounts } from '../shared/kube/index.js';
import { startPoolSources } from '../local/controlplane/adapter.js';
import { testLog } from '../test/logs.js';

/** A moment in reconcile-pool's life: an event delivered, or an API request answered (verb:outcome). */
export interface Mark {
  readonly at: number;
  readonly what: string;
}

/** A running reconcile-pool with its event sources. */
export interface Stack {
  /** Process ids of the adapters (for CPU accounting). */
  readonly adapterPids: readonly number[];
  /** Deliveries and answered requests since `since` (performance.now()), in order. */
  marks(since: number): Mark[];
  readonly kube: Kube;
  /** CloudEvents delivered so far (first deliveries). */
  delivered(): number;
  /** Redeliveries after a 5xx/409/429 answer so far. */
  redelivered(): number;
  /** API requests by verb so far. */
  counts(): RequestCounts;
  /** Resolves once no delivery has been in flight for `quietMs`. */
  idle(quietMs?: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** A logger that drops everything (a benchmark must not measure its own logging). */
export function silentLog(name: string): Logger {
  return testLog(name, process.env.BENCH_LOG || 'silent');
}

/** Starts reconcile-pool and the adapters for `namespaces`. */
export async function startStack(
  kc: KubeConfig,
  kubeconfigPath: string,
  knativeBinDir: string,
  namespaces: string[],
): Promise<Stack> {
  const marks: Mark[] = [];
  const kube = createKube(kc, {
    onRequest: (verb, outcome) => {
      marks.push({ at: performance.now(), what: `${verb}:${outcome}` });
    },
  });
  const app = buildReconcileApp({ kube, log: silentLog('reconcile-pool') });
  let delivered = 0;
  let redelivered = 0;
  let inFlight = 0;
  let lastDone = performance.now();
  // Plays the Broker of knative/base/eventing.yaml: its ingress accepts each event from the adapter
  // at once (202), and its Trigger's dispatcher delivers to reconcile-pool concurrently, redelivering
  // on 5xx, 409 and 429 with exponential backoff (5 retries from 100 ms, as the Trigger's delivery
  // spec is configured). Without it, the adapter's direct sink would send one event at a time and
  // wait for each reconcile, which no deployment of vmpool does.
  const dispatch = async (url: string, headers: Headers, body: ArrayBuffer): Promise<void> => {
    delivered++;
    inFlight++;
    marks.push({ at: performance.now(), what: 'delivered' });
    try {
      for (let attempt = 0; ; attempt++) {
        const res = await app.fetch(new Request(url, { method: 'POST', headers, body }), {});
        await res.arrayBuffer();
        const again = res.status >= 500 || res.status === 409 || res.status === 429;
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
        void dispatch(req.url, new Headers(req.headers), body);
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
  return {
    kube,
    adapterPids: adapters.map((a) => a.pid),
    marks: (since) => marks.filter((m) => m.at >= since),
    delivered: () => delivered,
    redelivered: () => redelivered,
    counts: () => kube.counts(),
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
    },
  };
}
