/**
 * The objects the benchmarks create: a pool with one Delete and one Retain disk per replica, its
 * ReplicaSet counterpart, namespaces, and small helpers over client-node.
 * @module
 */
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { readFileSync, readdirSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import type { RequestOptions } from 'node:https';
import { API_VERSION, GROUP, VERSION } from '../shared/api/index.js';
import type { VirtualMachinePool } from '../shared/api/index.js';
import { smallPool } from '../local/guide.js';
import { requestText } from '../local/controlplane/http.js';

/** The user guide's pool with 1 Gi disks: each replica gets a Delete disk (`root`) and a Retain one (`cache`). */
export function benchPool(namespace: string, name: string, replicas: number) {
  return {
    apiVersion: API_VERSION,
    ...smallPool(namespace, name, (p) => {
      p.spec.replicas = replicas;
      // Rollout benchmarks raise it to 2.
      p.spec.virtualMachineTemplate.spec.cpu.cores = 1;
    }),
  };
}

/** A ReplicaSet of bare pods (no scheduler or kubelet runs: creating the Pod objects is the work). */
export function benchReplicaSet(namespace: string, name: string, replicas: number) {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
      },
    },
  };
}

/** Typed clients of one kubeconfig. */
export function clients(kc: KubeConfig) {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const res = (plural: string, namespace: string) => ({
    group: GROUP,
    version: VERSION,
    plural,
    namespace,
  });
  return {
    custom,
    core,
    apps,
    async namespace(name: string): Promise<void> {
      // client-node's models are classes, but it serializes by field table: plain objects are fine.
      // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
      await core.createNamespace({ body: { metadata: { name } } });
    },
    /** Deletes a namespace and waits until the namespace controller has emptied and removed it. */
    async dropNamespace(name: string, timeoutMs = 900_000): Promise<void> {
      await core.deleteNamespace({ name });
      for (const end = Date.now() + timeoutMs; Date.now() < end;) {
        try {
          await core.readNamespace({ name });
        } catch (err) {
          if ((err as { code?: number }).code === 404) return;
          throw err;
        }
        await sleep(2000);
      }
      throw new Error(`namespace ${name} still exists after ${timeoutMs / 1000} s`);
    },
    async createPool(body: ReturnType<typeof benchPool>): Promise<VirtualMachinePool> {
      return (await custom.createNamespacedCustomObject({
        ...res('virtualmachinepools', body.metadata.namespace),
        body,
      })) as VirtualMachinePool;
    },
    async getPool(namespace: string, name: string): Promise<VirtualMachinePool> {
      return (await custom.getNamespacedCustomObject({
        ...res('virtualmachinepools', namespace),
        name,
      })) as VirtualMachinePool;
    },
    /** Sets spec.replicas with a merge patch (what `kubectl scale` costs, minus kubectl). */
    async scalePool(namespace: string, name: string, replicas: number): Promise<void> {
      await custom.patchNamespacedCustomObject(
        { ...res('virtualmachinepools', namespace), name, body: { spec: { replicas } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    },
    async replacePool(pool: VirtualMachinePool): Promise<void> {
      await custom.replaceNamespacedCustomObject({
        ...res('virtualmachinepools', pool.metadata.namespace ?? ''),
        name: pool.metadata.name ?? '',
        body: pool,
      });
    },
    async scaleReplicaSet(namespace: string, name: string, replicas: number): Promise<void> {
      await apps.patchNamespacedReplicaSet(
        { namespace, name, body: { spec: { replicas } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    },
    async createReplicaSet(body: ReturnType<typeof benchReplicaSet>): Promise<void> {
      const namespace = body.metadata.namespace;
      // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- see namespace()
      await apps.createNamespacedReplicaSet({ namespace, body });
    },
  };
}

/** Collection paths for watches. */
export const paths = {
  vms: (ns: string) => `/apis/${GROUP}/${VERSION}/namespaces/${ns}/virtualmachines`,
  disks: (ns: string) => `/apis/${GROUP}/${VERSION}/namespaces/${ns}/virtualdisks`,
  pods: (ns: string) => `/api/v1/namespaces/${ns}/pods`,
};

/** Percentile (nearest rank) of a sample. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

/** Median. */
export const median = (xs: readonly number[]): number => percentile(xs, 50);

/** Sleeps. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** CPU time in ms a process has used (all its threads, from /proc/<pid>/task/<tid>/schedstat). */
export function processCpuMs(pid: number): number {
  let ns = 0;
  try {
    for (const t of readdirSync(`/proc/${pid}/task`))
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return 0;
  }
  return ns / 1e6;
}

/** How long {@link settle} waited and whether the processes went quiet. */
export interface Settled {
  readonly waitedMs: number;
  readonly quiet: boolean;
  /** CPU ms per second of the processes over the last second waited. */
  readonly msPerS: number;
}

/**
 * Waits until `pids` together use under `quietMsPerS` of CPU per second for two seconds in a row,
 * or `timeoutMs` passed. A timed window that starts while the control plane still works off the one
 * before pays for it: the controller manager's garbage collector, behind after a burst of creates,
 * GETs each new disk's owner VM and that VM's pool for tens of seconds after the burst ended.
 */
export async function settle(
  pids: readonly number[],
  quietMsPerS = 100,
  timeoutMs = 60_000,
): Promise<Settled> {
  const cpu = (): number => pids.reduce((a, p) => a + processCpuMs(p), 0);
  const t0 = performance.now();
  let quietFor = 0;
  let msPerS = Infinity;
  while (quietFor < 2 && performance.now() - t0 < timeoutMs) {
    const [c0, w0] = [cpu(), performance.now()];
    await sleep(1000);
    msPerS = ((cpu() - c0) * 1000) / (performance.now() - w0);
    quietFor = msPerS < quietMsPerS ? quietFor + 1 : 0;
  }
  return { waitedMs: performance.now() - t0, quiet: quietFor >= 2, msPerS };
}

/** A log line of what {@link settle} found before `what`. */
export function settledLine(s: Settled, what: string): string {
  return `control plane ${s.quiet ? 'quiet' : 'still busy'} (${s.msPerS.toFixed(0)} CPU ms/s) after ${(s.waitedMs / 1000).toFixed(1)} s, before ${what}`;
}

/** Waits for `pids` to go quiet ({@link settle}) before the timed window `what`, and logs the wait. */
export async function quietBefore(
  pids: readonly number[],
  log: (l: string) => void,
  what: string,
): Promise<void> {
  log(settledLine(await settle(pids), what));
}

/** CPU ms per group of processes, read now; `cpuSince` turns two readings into what a run used. */
export function cpuReading(
  groups: Readonly<Record<string, readonly number[]>>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(groups).map(([k, pids]) => [k, pids.reduce((a, p) => a + processCpuMs(p), 0)]),
  );
}

/** What each group used between two readings, in ms. */
export function cpuSince(
  before: Readonly<Record<string, number>>,
  after: Readonly<Record<string, number>>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after).map(([k, v]) => [k, Math.round(v - (before[k] ?? 0))]),
  );
}

/**
 * The API server's own counters (its /metrics): requests by `verb resource` and watch events sent,
 * totals since it started; `apiserverSince` turns two readings into what a run cost it.
 */
export async function apiserverReading(kc: KubeConfig): Promise<Record<string, number>> {
  const server = kc.getCurrentCluster()?.server ?? '';
  const opts: RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const text = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest(`${server}/metrics`, { ...opts, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        resolve(body);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  const out: Record<string, number> = {};
  const label = (labels: string, k: string) => new RegExp(`${k}="([^"]*)"`).exec(labels)?.[1] ?? '';
  for (const m of text.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const l = m[1] ?? '';
    const sub = label(l, 'subresource');
    const key = `${label(l, 'verb')} ${label(l, 'resource')}${sub === '' ? '' : `/${sub}`}`;
    out[key] = (out[key] ?? 0) + Number(m[2]);
  }
  for (const m of text.matchAll(/^apiserver_watch_events_total\{([^}]*)\} (\S+)$/gm)) {
    const key = `watch events ${label(m[1] ?? '', 'kind')}`;
    out[key] = (out[key] ?? 0) + Number(m[2]);
  }
  return out;
}

/** etcd's counters that say what its work was, by the name a reading gives each. */
const ETCD_COUNTERS: Readonly<Record<string, string>> = {
  etcd_mvcc_put_total: 'etcd puts',
  etcd_mvcc_range_total: 'etcd ranges',
  etcd_debugging_mvcc_events_total: 'etcd watch events sent',
  etcd_server_proposals_committed_total: 'etcd proposals committed',
  etcd_disk_backend_commit_duration_seconds_count: 'etcd backend commits',
  etcd_network_client_grpc_received_bytes_total: 'etcd bytes received',
  etcd_network_client_grpc_sent_bytes_total: 'etcd bytes sent',
};

/**
 * etcd's own counters from a /metrics page: its unary gRPC calls by method (`etcd Range`,
 * `etcd Txn`, …, every code), and the MVCC, raft and network counters of {@link ETCD_COUNTERS}.
 * Totals since it started; {@link apiserverSince} turns two readings into what a window cost it.
 */
export function etcdCounters(page: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of page.matchAll(/^grpc_server_handled_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = m[1] ?? '';
    if (!labels.includes('grpc_type="unary"')) continue;
    const method = /grpc_method="([^"]*)"/.exec(labels)?.[1] ?? '';
    const key = `etcd ${method}`;
    out[key] = (out[key] ?? 0) + Number(m[2]);
  }
  for (const m of page.matchAll(/^(\w+) (\S+)$/gm)) {
    const key = ETCD_COUNTERS[m[1] ?? ''];
    if (key !== undefined) out[key] = Number(m[2]);
  }
  return out;
}

/** etcd's counters now ({@link etcdCounters}), read from its client URL's /metrics. */
export async function etcdReading(etcdUrl: string): Promise<Record<string, number>> {
  const got = await requestText({ url: `${etcdUrl}/metrics` });
  if (got.status !== 200) throw new Error(`etcd /metrics: HTTP ${got.status}`);
  return etcdCounters(got.body);
}

/** What the API server did between two readings (only what changed). */
export function apiserverSince(
  before: Readonly<Record<string, number>>,
  after: Readonly<Record<string, number>>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, Math.round(v - (before[k] ?? 0))] as const)
      .filter(([, v]) => v > 0),
  );
}
