/**
 * The Knative ApiServerSource receive adapter, run standalone against the test control plane: it
 * watches resources with the admin kubeconfig and POSTs CloudEvents to `sink`.
 *
 * Ports: the adapter always binds its health probes to :8080 (no override exists in eventing
 * v0.49.2) but ignores a bind failure, so several adapters run side by side; they just lack probes.
 * The pprof port (default :8008) is moved to a free port through PROFILING_PORT, and profiling is
 * turned on: its goroutine dump is how {@link startAdapter} knows the reflectors have listed.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBinaries } from './binaries.js';
import { EVENTING_MANIFEST, manifestsOfKind } from './crds.js';
import { killNow, onFreePorts, startProcess, stopPid, tail, waitFor } from './process.js';
import { shippedTriggerFilters } from './trigger.js';
import type { SubscriptionsFilter } from './trigger.js';

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
  /** Events that fail these filters are not sent (the ApiServerSource's `filters`; optional). */
  filters?: readonly SubscriptionsFilter[];
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

/** The namespaces the adapter watches one by one; none with `allNamespaces` (one watch for all). */
function watchedNamespaces(o: AdapterOptions): string[] {
  return o.allNamespaces === true ? [] : (o.namespaces ?? ['default']);
}

/** Builds the K_SOURCE_CONFIG document the ApiServerSource controller would render. */
export function sourceConfig(o: AdapterOptions): string {
  return JSON.stringify({
    namespaces: watchedNamespaces(o),
    allNamespaces: o.allNamespaces ?? false,
    resources: o.resources.map((r) => ({ gvr: r.gvr, selector: r.selector ?? '' })),
    ...(o.owner ? { owner: o.owner } : {}),
    mode: o.mode ?? 'Resource',
    ...(o.filters !== undefined && o.filters.length > 0 ? { filters: o.filters } : {}),
  });
}

/**
 * Starts the adapter and waits until each of its reflectors has made its first list and watches, so
 * every object created afterwards becomes an event. Objects that exist before then never do: the
 * adapter's store drops the list (a Knative ApiServerSource sends no event for what is already
 * there), so callers that need those reconciled tick a resync.
 */
export async function startAdapter(o: AdapterOptions): Promise<Adapter> {
  const binDir = o.binDir ?? (await ensureBinaries('knative'));
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'vmpool-adapter-'));
  const ownDir = o.dir === undefined;
  const name = o.name ?? 'vmpool-source';
  // Its profiling port is found free, then bound by the adapter: another process may take it between.
  const { proc, exitHook } = await onFreePorts(1, async ([profiling]) => {
    const proc = startProcess({
      name: 'apiserver_receive_adapter',
      bin: join(binDir, 'apiserver_receive_adapter'),
      args: [],
      logPath: join(dir, `adapter-${name}.log`),
      ...(ownDir ? { cleanup: dir } : {}),
      env: {
        ...process.env,
        KUBECONFIG: o.kubeconfigPath,
        K_SINK: o.sink,
        K_SOURCE_CONFIG: sourceConfig(o),
        NAME: name,
        NAMESPACE: o.namespace ?? 'default',
        SYSTEM_NAMESPACE: 'knative-eventing',
        METRICS_DOMAIN: 'knative.dev/eventing',
        // Profiling on: its goroutine dump is the one place that says its lists are done (below).
        K_OBSERVABILITY_CONFIG: JSON.stringify({ runtime: { profiling: 'enabled' } }),
        K_LOGGING_CONFIG: '{}',
        PROFILING_PORT: String(profiling),
      },
    });
    const exitHook = () => {
      killNow(proc.pid);
    };
    process.on('exit', exitHook);
    try {
      // The adapter's store ignores Replace (eventing's delegate.go), so an object that is already
      // there when a reflector lists never becomes an event. Ready is every reflector past its
      // first list: in client-go only then does ListAndWatch call watchWithResync. (Its "Starting
      // in resilient mode" log line comes before the reflectors exist.)
      const reflectors = o.resources.length * Math.max(1, watchedNamespaces(o).length);
      await waitFor(
        `the adapter's ${String(reflectors)} reflectors past their first list`,
        async () => listsDone(await goroutines(Number(profiling))) >= reflectors,
        { timeoutMs: 30_000, proc, intervalMs: 20 },
      );
    } catch (err) {
      await stopPid(proc.pid);
      process.off('exit', exitHook);
      throw err;
    }
    return { proc, exitHook };
  });
  const stop = async () => {
    await stopPid(proc.pid);
    process.off('exit', exitHook);
    if (ownDir) rmSync(dir, { recursive: true, force: true });
  };
  return { pid: proc.pid, logPath: proc.logPath, log: () => tail(proc.logPath, 200), stop };
}

/** The adapter's goroutine dump, one stack per paragraph (Go's pprof, `debug=2`). */
async function goroutines(profilingPort: number): Promise<string> {
  const res = await fetch(
    `http://127.0.0.1:${String(profilingPort)}/debug/pprof/goroutine?debug=2`,
  );
  if (!res.ok) throw new Error(`pprof answered ${String(res.status)}`);
  return res.text();
}

/** How many reflectors of a goroutine dump have listed and now watch. */
function listsDone(dump: string): number {
  return dump.split(/\n\s*\n/).filter((g) => g.includes('(*Reflector).watchWithResync(')).length;
}

/** A metav1.LabelSelector, as an ApiServerSource spells it. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

/** The parts of an ApiServerSource spec the Eventing controller renders into the adapter's config. */
export interface ApiServerSourceSpec {
  mode?: 'Resource' | 'Reference';
  namespaceSelector?: LabelSelector;
  owner?: { apiVersion: string; kind: string };
  resources: { apiVersion: string; kind: string; selector?: LabelSelector }[];
}

/**
 * A label selector in the string form the adapter sends as `labelSelector` on LIST and WATCH, as
 * apimachinery's `LabelSelectorAsSelector(s).String()` writes it: requirements sorted by key,
 * `k=v`, `k in (a,b)`, `k notin (a,b)`, `k` (Exists) and `!k` (DoesNotExist).
 */
export function selectorString(selector: LabelSelector): string {
  const reqs: [string, string][] = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => [
    k,
    `${k}=${v}`,
  ]);
  for (const e of selector.matchExpressions ?? []) {
    const values = [...(e.values ?? [])].sort().join(',');
    const text = {
      In: `${e.key} in (${values})`,
      NotIn: `${e.key} notin (${values})`,
      Exists: e.key,
      DoesNotExist: `!${e.key}`,
    }[e.operator];
    reqs.push([e.key, text]);
  }
  return reqs
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, t]) => t)
    .join(',');
}

/**
 * The resource (plural) the Eventing controller guesses for a kind: apimachinery's
 * `UnsafeGuessKindToResource` (lower case, then -s, -es after s, -ies for a final y). It is not
 * looked up in discovery, which is why a CRD's plural must be the regular one.
 */
export function guessResource(kind: string): string {
  const singular = kind.toLowerCase();
  if (singular.endsWith('endpoints')) return singular;
  if (singular.endsWith('s')) return `${singular}es`;
  if (singular.endsWith('y')) return `${singular.slice(0, -1)}ies`;
  return `${singular}s`;
}

/**
 * What the adapter of an ApiServerSource watches and how, as the Eventing controller renders it into
 * K_SOURCE_CONFIG (pkg/reconciler/apiserversource/resources/receive_adapter.go `makeEnv`): one
 * watch per resource with its label selector, all namespaces for an empty `namespaceSelector`, only
 * the source's own namespace without one. `namespaces` overrides the namespace list (tests confine
 * an adapter to their own namespace).
 */
export function adapterConfigOf(
  spec: ApiServerSourceSpec,
  sourceNamespace: string,
  namespaces?: string[],
): Pick<AdapterOptions, 'resources' | 'namespaces' | 'allNamespaces' | 'mode' | 'owner'> {
  const sel = spec.namespaceSelector;
  const allNamespaces =
    sel !== undefined &&
    Object.keys(sel.matchLabels ?? {}).length === 0 &&
    (sel.matchExpressions ?? []).length === 0;
  if (namespaces === undefined && sel !== undefined && !allNamespaces)
    throw new Error('a non-empty namespaceSelector needs the matching namespaces listed');
  return {
    resources: spec.resources.map((r) => {
      const [group, version] = r.apiVersion.includes('/')
        ? (r.apiVersion.split('/') as [string, string])
        : ['', r.apiVersion];
      const selector = r.selector === undefined ? '' : selectorString(r.selector);
      return {
        gvr: { Group: group, Version: version, Resource: guessResource(r.kind) },
        ...(selector === '' ? {} : { selector }),
      };
    }),
    ...(namespaces !== undefined
      ? { namespaces, allNamespaces: false }
      : allNamespaces
        ? { allNamespaces: true }
        : { namespaces: [sourceNamespace], allNamespaces: false }),
    mode: spec.mode ?? 'Reference',
    ...(spec.owner === undefined ? {} : { owner: spec.owner }),
  };
}

/** A named ApiServerSource of a manifest. */
export interface NamedSource {
  name: string;
  namespace: string;
  spec: ApiServerSourceSpec;
}

/** The ApiServerSources knative/ deploys (knative/base/eventing.yaml). */
export function shippedSources(file = EVENTING_MANIFEST): NamedSource[] {
  return manifestsOfKind('ApiServerSource', file).map((o) => ({
    name: o.metadata.name,
    namespace: o.metadata.namespace ?? 'default',
    spec: o.spec as ApiServerSourceSpec,
  }));
}

/** Where the pool sources look and deliver. */
export interface PoolSourcesOptions {
  kubeconfigPath: string;
  binDir: string;
  sink: string;
  /** Namespaces to watch; as the shipped sources say (all) when unset. */
  namespaces?: string[];
  /** Prefix of the adapters' names. */
  name: string;
  /**
   * The Trigger of knative/base/eventing.yaml whose filters the adapters apply, when they sink
   * straight into the function: there is no Broker to drop what the Trigger would not deliver.
   * Unset, every event is sent (to a stand-in Broker that filters, or to a test that wants them all).
   */
  trigger?: string;
}

/**
 * One adapter per ApiServerSource knative/ deploys, configured as the Eventing controller would
 * configure it (Resource mode; pools, and the VMs and disks carrying a pool-uid label). With
 * `trigger`, what reaches reconcile-pool here is what reaches it in a cluster through the Broker.
 */
export async function startPoolSources(o: PoolSourcesOptions): Promise<Adapter[]> {
  const started: Adapter[] = [];
  const filters = o.trigger === undefined ? {} : { filters: shippedTriggerFilters(o.trigger) };
  try {
    for (const source of shippedSources()) {
      started.push(
        await startAdapter({
          kubeconfigPath: o.kubeconfigPath,
          binDir: o.binDir,
          sink: o.sink,
          ...adapterConfigOf(source.spec, source.namespace, o.namespaces),
          ...filters,
          name: `${o.name}-${source.name}`,
        }),
      );
    }
    return started;
  } catch (err) {
    await Promise.all(started.map((a) => a.stop()));
    throw err;
  }
}
