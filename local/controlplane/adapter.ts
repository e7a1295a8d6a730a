/**
 * The Knative ApiServerSource receive adapter, run standalone against the test control plane: it
 * watches resources with the admin kubeconfig and POSTs CloudEvents to `sink`.
 *
 * Ports: the adapter always binds its health probes to :8080 (no override exists in eventing
 * v0.49.2) but ignores a bind failure, so several adapters run side by side; they just lack probes.
 * The pprof port (default :8008) is moved to a free port through PROFILING_PORT.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_VERSION, GROUP, VERSION } from '../../shared/api/index.js';
import { ensureBinaries } from './binaries.js';
import { freePort, killNow, startProcess, stopPid, tail, waitFor } from './process.js';

/** A watched resource; `Group`/`Version`/`Resource` are Go field names, hence capitalised. */
export interface AdapterResource {
  gvr: { Group: string; Version: string; Resource: string };
  /** Label selector, e.g. `app=x`. */
  selector?: string;
}

/** Options of {@link startAdapter}. */
export interface AdapterOptions {
  kubeconfigPath: string;
  /** CloudEvents target URL, e.g. `http://127.0.0.1:PORT/`. */
  sink: string;
  resources: AdapterResource[];
  /** Namespaces to watch; ignored with `allNamespaces`. */
  namespaces?: string[];
  allNamespaces?: boolean;
  /** `Resource` sends the whole object as data, `Reference` only a reference. */
  mode?: 'Resource' | 'Reference';
  /** Only objects owned by this kind (optional). */
  owner?: { apiVersion: string; kind: string };
  /** Source name; becomes part of event attributes. */
  name?: string;
  namespace?: string;
  binDir?: string;
  /** Directory for the log; a temp dir by default. */
  dir?: string;
}

/** A running adapter. */
export interface Adapter {
  pid: number;
  logPath: string;
  /** The adapter's log so far (for assertions' messages). */
  log(): string;
  stop(): Promise<void>;
}

/** Builds the K_SOURCE_CONFIG document the ApiServerSource controller would render. */
export function sourceConfig(o: AdapterOptions): string {
  return JSON.stringify({
    namespaces: o.allNamespaces === true ? [] : (o.namespaces ?? ['default']),
    allNamespaces: o.allNamespaces ?? false,
    resources: o.resources.map((r) => ({ gvr: r.gvr, selector: r.selector ?? '' })),
    ...(o.owner ? { owner: o.owner } : {}),
    mode: o.mode ?? 'Resource',
  });
}

/**
 * Starts the adapter and waits until it has started its watches (its log says so), so events for
 * objects created afterwards are not missed.
 */
export async function startAdapter(o: AdapterOptions): Promise<Adapter> {
  const binDir = o.binDir ?? (await ensureBinaries('knative'));
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'vmpool-adapter-'));
  const ownDir = o.dir === undefined;
  const name = o.name ?? 'vmpool-source';
  const proc = startProcess({
    name: 'apiserver_receive_adapter',
    bin: join(binDir, 'apiserver_receive_adapter'),
    args: [],
    logPath: join(dir, `adapter-${name}.log`),
    env: {
      ...process.env,
      KUBECONFIG: o.kubeconfigPath,
      K_SINK: o.sink,
      K_SOURCE_CONFIG: sourceConfig(o),
      NAME: name,
      NAMESPACE: o.namespace ?? 'default',
      SYSTEM_NAMESPACE: 'knative-eventing',
      METRICS_DOMAIN: 'knative.dev/eventing',
      K_OBSERVABILITY_CONFIG: '{}',
      K_LOGGING_CONFIG: '{}',
      PROFILING_PORT: String(await freePort()),
    },
  });
  const exitHook = () => {
    killNow(proc.pid);
  };
  process.on('exit', exitHook);
  const stop = async () => {
    await stopPid(proc.pid);
    process.off('exit', exitHook);
    if (ownDir) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      'the adapter to start watching',
      // Logged right before the reflectors start; objects created later still reach the initial list.
      () => Promise.resolve(/Starting in (resilient|fail-fast) mode/.test(tail(proc.logPath, 200))),
      { timeoutMs: 30_000, proc },
    );
  } catch (err) {
    await stopPid(proc.pid);
    process.off('exit', exitHook);
    throw err;
  }
  return { pid: proc.pid, logPath: proc.logPath, log: () => tail(proc.logPath, 200), stop };
}

/** Where the two pool sources look and deliver. */
export interface PoolSourcesOptions {
  kubeconfigPath: string;
  binDir: string;
  sink: string;
  /** Namespaces to watch; all when unset. */
  namespaces?: string[];
  /** Prefix of the adapters' names. */
  name: string;
}

/**
 * The two ApiServerSources vmpool needs, in Resource mode, as knative/ deploys them: pools (no owner
 * filter, which would drop them), and VMs and disks whose controller is a pool.
 */
export async function startPoolSources(o: PoolSourcesOptions): Promise<Adapter[]> {
  const gvr = (Resource: string) => ({ gvr: { Group: GROUP, Version: VERSION, Resource } });
  const where = o.namespaces === undefined ? { allNamespaces: true } : { namespaces: o.namespaces };
  const common = {
    kubeconfigPath: o.kubeconfigPath,
    binDir: o.binDir,
    sink: o.sink,
    mode: 'Resource' as const,
    ...where,
  };
  const pools = await startAdapter({
    ...common,
    resources: [gvr('virtualmachinepools')],
    name: `${o.name}-pools`,
  });
  try {
    const children = await startAdapter({
      ...common,
      resources: [gvr('virtualmachines'), gvr('virtualdisks')],
      owner: { apiVersion: API_VERSION, kind: 'VirtualMachinePool' },
      name: `${o.name}-children`,
    });
    return [pools, children];
  } catch (err) {
    await pools.stop();
    throw err;
  }
}
