/**
 * A stand-in for the virtualization platform's controllers: it polls VirtualMachines and VirtualDisks
 * and moves their status the way the platform would (see lifecycle.ts), writing through the status
 * subresource, and holds deleted VMs in Terminating with a finalizer for a while.
 * @module
 */
import {
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { GROUP, VERSION } from '../../shared/api/meta.js';
import {
  DEFAULT_DELAYS,
  attachmentsOf,
  nextDiskStatus,
  nextVmStatus,
  placeOn,
  type Attachment,
  type Delays,
  type Memory,
} from './lifecycle.js';
import { seededRandom } from './rng.js';

/** The finalizer the simulator puts on VMs so deletion is observable (Terminating). */
export const SIM_FINALIZER = 'virtualization.deckhouse.io/vm-cleanup-sim';

/** Options of {@link startSimulator}. */
export interface SimulatorOptions {
  kubeconfigPath: string;
  /** Only this namespace (tests isolate by namespace); all namespaces if unset. */
  namespace?: string;
  delays?: Partial<Delays>;
  /** Relative jitter of each delay, 0..1 (default 0: exact delays). */
  jitter?: number;
  /** Seed of the jitter, so a run replays identically. */
  seed?: number;
  /** Poll interval (ms). */
  intervalMs?: number;
  /**
   * Nodes to place started VMs on (`status.nodeName`), spreading each pool's VMs (see placeOn);
   * unset: VMs get no node, as before.
   */
  nodes?: readonly string[];
  /** Called with errors of a tick (conflicts are expected and not reported). */
  onError?: (err: unknown) => void;
  /**
   * VMs that never reach Running (they stay Starting): those carrying this label (`key` or
   * `key=value`), and a seeded share of all VMs. Decided once per VM, when first seen.
   */
  neverStart?: { readonly label?: string; readonly rate?: number };
}

/** The label selector of `neverStart.label` as a test on a VM's labels. */
function labelTest(selector: string | undefined): (labels: Record<string, string>) => boolean {
  if (selector === undefined || selector === '') return () => false;
  const [key = '', value] = selector.split('=', 2);
  return (labels) => (value === undefined ? key in labels : labels[key] === value);
}

/** A running simulator. */
export interface Simulator {
  /** Requests a restart of a VM (what a user does for restartApprovalMode: Manual). */
  restart(namespace: string, name: string): void;
  /** Resolves after one more full pass over all objects. */
  settled(): Promise<void>;
  stop(): Promise<void>;
}

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };
const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

function isConflict(err: unknown): boolean {
  const code = (err as { code?: number }).code;
  // 409: stale write; 422: the resourceVersion test op failed; 404: deleted meanwhile.
  return code === 409 || code === 422 || code === 404;
}

/** Starts the simulator loop; stop() waits for the current pass to finish. */
export function startSimulator(opts: SimulatorOptions): Simulator {
  const kc = new KubeConfig();
  kc.loadFromFile(opts.kubeconfigPath);
  const api = kc.makeApiClient(CustomObjectsApi);
  const delays: Delays = { ...DEFAULT_DELAYS, ...opts.delays };
  const rng = seededRandom(opts.seed ?? 1);
  const jitter = opts.jitter ?? 0;
  const memory = new Map<string, Memory>();
  const uids = new Map<string, string>();
  const restarts = new Set<string>();
  let running = true;
  let passes = 0;

  const draw = (ms: number) => Math.round(ms * (1 + jitter * (rng() * 2 - 1)));
  const delayOf = (phase: string): number => {
    switch (phase) {
      case 'Pending':
        return draw(delays.vmPending);
      case 'Starting':
        return draw(delays.vmStarting);
      case 'Stopping':
        return draw(delays.vmStopping);
      case 'Terminating':
        return draw(delays.vmTerminating);
      default:
        return 0;
    }
  };

  const list = async (plural: string): Promise<Obj[]> => {
    const res = (
      opts.namespace === undefined
        ? await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural })
        : await api.listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            plural,
            namespace: opts.namespace,
          })
    ) as { items: Obj[] };
    // Sorted so the order of writes (and of jitter draws) is deterministic.
    const key = (o: Obj) => `${String(o.metadata.namespace)}/${String(o.metadata.name)}`;
    return res.items.sort((a, b) => key(a).localeCompare(key(b)));
  };

  const patch = async (plural: string, o: Obj, ops: object[], status: boolean) => {
    const req = {
      group: GROUP,
      version: VERSION,
      plural,
      namespace: String(o.metadata.namespace),
      name: String(o.metadata.name),
      body: [
        { op: 'test', path: '/metadata/resourceVersion', value: o.metadata.resourceVersion },
        ...ops,
      ],
    };
    try {
      if (status) await api.patchNamespacedCustomObjectStatus(req, JSON_PATCH);
      else await api.patchNamespacedCustomObject(req, JSON_PATCH);
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  };

  const memOf = (uid: string, now: number, delay: number): Memory => {
    let m = memory.get(uid);
    if (!m) {
      m = { since: now, delay };
      memory.set(uid, m);
    }
    return m;
  };

  const writeStatus = async (plural: string, o: Obj, next: Record<string, unknown>) => {
    if (JSON.stringify(next) === JSON.stringify(o.status ?? {})) return;
    await patch(plural, o, [{ op: 'add', path: '/status', value: next }], true);
  };

  /**
   * Moves disks along and reports the VMs using each (`attached`, from the VMs of this pass); answers
   * the phase of every disk by `namespace/name`.
   */
  const disks = async (
    now: number,
    all: readonly Obj[],
    attached: ReadonlyMap<string, Attachment[]>,
  ): Promise<Map<string, string>> => {
    const phases = new Map<string, string>();
    const writes: Promise<void>[] = [];
    for (const d of all) {
      const key = `${String(d.metadata.namespace)}/${String(d.metadata.name)}`;
      if (d.metadata.deletionTimestamp !== undefined) continue;
      const m = memOf(String(d.metadata.uid), now, draw(delays.diskReady));
      const next = nextDiskStatus(d, m, now, attached.get(key));
      phases.set(key, String(next.phase));
      writes.push(writeStatus('virtualdisks', d, next));
    }
    await Promise.all(writes);
    return phases;
  };
  /**
   * A VM leaves Pending once the disks it references are Ready (provisioned). A disk not there
   * (yet) does not hold it: the simulator lists disks before VMs, and a VM's own disks follow it.
   */
  const disksReady = (v: Obj, phases: ReadonlyMap<string, string>): boolean => {
    const refs = (
      (v.spec as { blockDeviceRefs?: Array<{ kind: string; name: string }> }).blockDeviceRefs ?? []
    ).filter((r) => r.kind === 'VirtualDisk');
    return refs.every((r) => {
      const phase = phases.get(`${String(v.metadata.namespace)}/${r.name}`);
      return phase === undefined || phase === 'Ready';
    });
  };
  const failing = labelTest(opts.neverStart?.label);
  const failRate = opts.neverStart?.rate ?? 0;

  /** VMs per node of each pool (`namespace/pool`), counted afresh every pass. */
  const loadOf = (vms: readonly Obj[]): Map<string, Map<string, number>> => {
    const out = new Map<string, Map<string, number>>();
    for (const v of vms) {
      const node = (v.status as { nodeName?: string } | undefined)?.nodeName;
      if (node === undefined || v.metadata.deletionTimestamp !== undefined) continue;
      const load = out.get(groupOf(v)) ?? new Map<string, number>();
      load.set(node, (load.get(node) ?? 0) + 1);
      out.set(groupOf(v), load);
    }
    return out;
  };
  const groupOf = (v: Obj): string => {
    const labels = (v.metadata.labels ?? {}) as Record<string, string>;
    return `${String(v.metadata.namespace)}/${labels['vmpool.virtualization.deckhouse.io/pool'] ?? ''}`;
  };
  const place = (
    v: Obj,
    next: Record<string, unknown>,
    loads: Map<string, Map<string, number>>,
  ) => {
    const nodes = opts.nodes ?? [];
    if (nodes.length === 0 || next.nodeName !== undefined) return;
    if (next.phase === undefined || next.phase === 'Pending') return;
    const load = loads.get(groupOf(v)) ?? new Map<string, number>();
    const node = placeOn(nodes, load);
    load.set(node, (load.get(node) ?? 0) + 1);
    loads.set(groupOf(v), load);
    next.nodeName = node;
  };

  const vm = async (
    v: Obj,
    now: number,
    loads: Map<string, Map<string, number>>,
    phases: ReadonlyMap<string, string>,
  ) => {
    const uid = String(v.metadata.uid);
    const finalizers = (v.metadata.finalizers ?? []) as string[];
    const fresh = !memory.has(uid);
    const m = memOf(uid, now, delayOf('Pending'));
    if (fresh) {
      const labels = (v.metadata.labels ?? {}) as Record<string, string>;
      m.neverStart = failing(labels) || (failRate > 0 && rng() < failRate);
    }
    uids.set(`${String(v.metadata.namespace)}/${String(v.metadata.name)}`, uid);
    if (restarts.delete(uid)) m.restart = true;
    const status = (v.status ?? {}) as Record<string, unknown>;
    if (v.metadata.deletionTimestamp !== undefined) {
      if (!finalizers.includes(SIM_FINALIZER)) return;
      if (status.phase !== 'Terminating') {
        m.since = now;
        m.delay = delayOf('Terminating');
        await writeStatus('virtualmachines', v, { ...status, phase: 'Terminating' });
      } else if (now - m.since >= m.delay) {
        const rest = finalizers.filter((f) => f !== SIM_FINALIZER);
        await patch(
          'virtualmachines',
          v,
          [{ op: 'replace', path: '/metadata/finalizers', value: rest }],
          false,
        );
        memory.delete(uid);
      }
      return;
    }
    if (!finalizers.includes(SIM_FINALIZER)) {
      const op =
        v.metadata.finalizers === undefined
          ? { op: 'add', path: '/metadata/finalizers', value: [SIM_FINALIZER] }
          : { op: 'add', path: '/metadata/finalizers/-', value: SIM_FINALIZER };
      // The write bumps resourceVersion; the status is handled on the next pass.
      await patch('virtualmachines', v, [op], false);
      return;
    }
    const next = nextVmStatus(
      v,
      m,
      now,
      (phase) => {
        m.since = now;
        m.delay = delayOf(phase);
      },
      disksReady(v, phases),
    );
    place(v, next, loads);
    await writeStatus('virtualmachines', v, next);
  };

  const waiters: (() => void)[] = [];
  const loop = (async () => {
    while (running) {
      const now = Date.now();
      try {
        const diskList = await list('virtualdisks');
        const vms = await list('virtualmachines');
        const phases = await disks(now, diskList, attachmentsOf(vms));
        const loads = loadOf(vms);
        // Each VM's decisions (and jitter draws) are made in list order before its first write, so
        // the writes of a pass go out together without changing what a seed replays.
        await Promise.all(vms.map((v) => vm(v, now, loads, phases)));
      } catch (err) {
        opts.onError?.(err);
      }
      passes++;
      for (const w of waiters.splice(0)) w();
      await sleep(opts.intervalMs ?? 50);
    }
  })();

  return {
    restart(namespace, name) {
      const uid = uids.get(`${namespace}/${name}`);
      if (uid !== undefined) restarts.add(uid);
    },
    async settled() {
      const target = passes + 2;
      while (passes < target && running) await new Promise<void>((r) => waiters.push(r));
    },
    async stop() {
      running = false;
      await loop;
      for (const w of waiters.splice(0)) w();
    },
  };
}
