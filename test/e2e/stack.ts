/**
 * vmpool's event-driven functions wired to the test control plane as in a cluster: reconcile-pool and
 * disk-gc-tick served over HTTP, the real ApiServerSource adapter configured from knative/'s source
 * (pools; VMs and disks with a pool-uid label) in Resource mode and applying the reconcile-pool
 * Trigger's filters (no disk's add event), the platform simulator, and
 * PingSource-like resync and GC ticks.
 * @module
 */
import { pingInit } from '../../local/events.js';
import { buildGcApp } from '../../functions/disk-gc-tick/app.js';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import { serveApp } from '../../shared/http/index.js';
import type { Logger, ServedApp } from '../../shared/http/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { startPoolSources } from '../../local/controlplane/adapter.js';
import { WATCH_TRIGGER } from '../../local/controlplane/trigger.js';
import { startSimulator } from '../../local/simulator/simulator.js';
import type { Simulator, SimulatorOptions } from '../../local/simulator/simulator.js';
import { cluster, functionKube } from './harness.js';
import { testLog } from '../logs.js';

/** A running stack. */
export interface Stack {
  /** reconcile-pool's Kube (its own ServiceAccount), for extra reconcilers a test starts. */
  readonly kube: Kube;
  readonly sim: Simulator;
  readonly reconcileUrl: string;
  readonly gcUrl: string;
  /** POSTs one PingSource tick to a function and returns the HTTP status. */
  ping(url: string, data?: unknown): Promise<number>;
  /** Number of reconcile requests answered 5xx (a healthy run has none that stay unresolved). */
  readonly errors: string[];
  stop(): Promise<void>;
}

/** Function logs: silent unless `VMPOOL_E2E_LOG` names a level. */
const silent = (name: string): Logger => testLog(name, process.env.VMPOOL_E2E_LOG || 'silent');

/**
 * Starts the stack for one namespace. `resyncMs` 0 disables the periodic resync tick; `nodes` has
 * the simulator place started VMs on those nodes (`status.nodeName`).
 */
export async function startStack(
  namespace: string,
  opts: {
    resyncMs?: number;
    nodes?: readonly string[];
    neverStart?: SimulatorOptions['neverStart'];
    /** reconcile-pool's create burst (default the shipped one; small to watch bursts). */
    createBurst?: number;
  } = {},
): Promise<Stack> {
  const { info } = cluster();
  process.env.KUBECONFIG = info.kubeconfigPath;
  const kube = await functionKube('reconcile-pool');
  const errors: string[] = [];
  const burst = opts.createBurst === undefined ? {} : { createBurst: opts.createBurst };
  const reconcile = serveApp(buildReconcileApp({ kube, log: silent('reconcile-pool'), ...burst }), {
    port: 0,
    hostname: '127.0.0.1',
    handleSignals: false,
  });
  const gcKube = await functionKube('disk-gc-tick');
  const gc = serveApp(buildGcApp({ kube: gcKube, log: silent('disk-gc-tick') }), {
    port: 0,
    hostname: '127.0.0.1',
    handleSignals: false,
  });
  const served: ServedApp[] = [reconcile, gc];
  const reconcileUrl = `http://127.0.0.1:${(await reconcile.listening).port}/`;
  const gcUrl = `http://127.0.0.1:${(await gc.listening).port}/`;
  const sim = startSimulator({
    kubeconfigPath: info.kubeconfigPath,
    namespace,
    seed: 7,
    ...(opts.nodes === undefined ? {} : { nodes: opts.nodes }),
    ...(opts.neverStart === undefined ? {} : { neverStart: opts.neverStart }),
    delays: {
      diskReady: 200,
      vmPending: 100,
      vmStarting: 200,
      vmStopping: 100,
      vmTerminating: 300,
    },
  });
  const adapters = await startPoolSources({
    kubeconfigPath: info.kubeconfigPath,
    binDir: info.knativeBinDir,
    sink: reconcileUrl,
    namespaces: [namespace],
    name: namespace,
    trigger: WATCH_TRIGGER,
  });
  const ping = async (url: string, data: unknown = { namespace }): Promise<number> => {
    const res = await fetch(
      url,
      pingInit(data, `/apis/v1/namespaces/${namespace}/pingsources/resync`),
    );
    if (res.status >= 500) errors.push(`${url} ${res.status} ${await res.text()}`);
    return res.status;
  };
  const resyncMs = opts.resyncMs ?? 2000;
  const timer =
    resyncMs > 0
      ? setInterval(() => void ping(reconcileUrl).catch(() => undefined), resyncMs)
      : undefined;
  return {
    kube,
    sim,
    reconcileUrl,
    gcUrl,
    ping,
    errors,
    stop: async () => {
      if (timer) clearInterval(timer);
      await Promise.all(adapters.map((a) => a.stop()));
      await sim.stop();
      await Promise.all(served.map((s) => s.close()));
    },
  };
}
