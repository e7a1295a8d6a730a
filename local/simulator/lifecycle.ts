/**
 * The pure part of the platform simulator: given an object, what the platform would write next.
 * Kept free of I/O so the state machine is readable in one place.
 * @module
 */
import { AWAITING_RESTART } from '../../shared/api/vm.js';

/** Delays (ms) of each simulated transition. */
export interface Delays {
  /** VirtualDisk Pending → Ready. */
  diskReady: number;
  /** VM Pending → Starting (or Stopped); a VM also waits in Pending until its disks are Ready. */
  vmPending: number;
  /** VM Starting → Running: the boot. */
  vmStarting: number;
  /** VM Stopping → Stopped (or Starting in a restart). */
  vmStopping: number;
  /** How long a deleted VM stays Terminating before its finalizer goes. */
  vmTerminating: number;
}

/** Default delays: short, but long enough for tests to observe every phase. */
export const DEFAULT_DELAYS: Delays = {
  diskReady: 300,
  vmPending: 200,
  vmStarting: 300,
  vmStopping: 200,
  vmTerminating: 500,
};

/** Per-object memory of the simulator (keyed by uid). */
export interface Memory {
  /** When the current phase was entered, and how long it should last. */
  since: number;
  delay: number;
  /** The restart-relevant spec the running VM booted with. */
  applied?: string;
  /** A restart was requested (automatic approval or an explicit restart()). */
  restart?: boolean;
  /** This VM never boots: it stays Starting (a broken image, a failing host). */
  neverStart?: boolean;
}

/** How many phase transitions a VM's history keeps (the platform keeps a short history too). */
const HISTORY = 16;

/** The status with a phase transition to `phase` at `now` appended to `stats.phasesTransitions`. */
function withTransition(status: Status, phase: string, now: number): Status {
  const stats = (status.stats ?? {}) as Obj;
  const history = ((stats.phasesTransitions ?? []) as Obj[]).slice(-(HISTORY - 1));
  const timestamp = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
  return { ...status, stats: { ...stats, phasesTransitions: [...history, { phase, timestamp }] } };
}

type Obj = Record<string, unknown>;
type Status = Record<string, unknown> & { phase?: string; conditions?: Obj[] };

/** Spec fields that apply without a restart; everything else waits for one. */
const HOT = new Set(['runPolicy', 'disruptions']);

/** The part of a VM spec whose change needs a restart, canonically serialised. */
export function restartRelevant(spec: Obj): string {
  const keys = Object.keys(spec)
    .filter((k) => !HOT.has(k))
    .sort();
  return JSON.stringify(keys.map((k) => [k, spec[k]]));
}

/** Whether the run policy wants the VM running. */
export function wantsRunning(spec: Obj): boolean {
  return spec.runPolicy !== 'AlwaysOff' && spec.runPolicy !== 'Manual';
}

function approval(spec: Obj): string | undefined {
  const d = spec.disruptions as Obj | undefined;
  return d?.restartApprovalMode as string | undefined;
}

function withoutAwaiting(conditions: Obj[] | undefined): Obj[] {
  return (conditions ?? []).filter((c) => c.type !== AWAITING_RESTART);
}

function awaiting(gen: number | undefined, now: number): Obj {
  return {
    type: AWAITING_RESTART,
    status: 'True',
    reason: 'ChangesPendingRestart',
    message: 'Changes to the VM configuration require a restart to be applied.',
    lastTransitionTime: new Date(now).toISOString().replace(/\.\d+Z$/, 'Z'),
    ...(gen !== undefined ? { observedGeneration: gen } : {}),
  };
}

/** An entry of a disk's `status.attachedToVirtualMachines`, as the platform writes it. */
export interface Attachment {
  readonly name: string;
  readonly mounted: boolean;
}

/** Phases in which a VM's process holds its disks: they are mounted. */
const MOUNTED = new Set(['Starting', 'Running', 'Stopping', 'Migrating', 'Terminating']);

/**
 * What the platform reports in each disk's `status.attachedToVirtualMachines`, by `namespace/disk`:
 * every VM of the namespace naming the disk in `spec.blockDeviceRefs`, Terminating ones until they
 * are gone, `mounted` while the VM runs. Sorted by VM name, so an unchanged world writes nothing.
 */
export function attachmentsOf(vms: readonly Obj[]): Map<string, Attachment[]> {
  const out = new Map<string, Attachment[]>();
  for (const v of vms) {
    const meta = v.metadata as Obj;
    const refs = ((v.spec as Obj | undefined)?.blockDeviceRefs ?? []) as Obj[];
    const phase = (v.status as Status | undefined)?.phase;
    for (const r of refs) {
      if (r.kind !== 'VirtualDisk') continue;
      const key = `${String(meta.namespace)}/${String(r.name)}`;
      const list = out.get(key) ?? [];
      list.push({ name: String(meta.name), mounted: phase !== undefined && MOUNTED.has(phase) });
      out.set(key, list);
    }
  }
  for (const list of out.values()) list.sort((x, y) => (x.name < y.name ? -1 : 1));
  return out;
}

/**
 * The next status of a VirtualDisk: its phase moves on, and `attached` (the VMs using it) is
 * reported in `attachedToVirtualMachines`, absent when none does.
 */
export function nextDiskStatus(
  disk: Obj,
  mem: Memory,
  now: number,
  attached: readonly Attachment[] = [],
): Status {
  const meta = disk.metadata as Obj;
  const spec = (disk.spec ?? {}) as Obj;
  const status = { ...((disk.status ?? {}) as Status) };
  if (attached.length > 0) status.attachedToVirtualMachines = attached.map((x) => ({ ...x }));
  else delete status.attachedToVirtualMachines;
  const size = ((spec.persistentVolumeClaim ?? {}) as Obj).size as string | number | undefined;
  status.observedGeneration = meta.generation;
  if (status.phase === undefined) status.phase = 'Pending';
  else if (status.phase === 'Pending' && now - mem.since >= mem.delay) status.phase = 'Ready';
  if (status.phase === 'Ready' && size !== undefined)
    status.capacity = typeof size === 'number' ? String(size) : size;
  return status;
}

/**
 * The next status of a VirtualMachine. Mutates `mem` (phase clock, applied spec, restart flag);
 * `enter` is called with the phase entered so the caller can draw its delay. `disksReady` false
 * holds the VM in Pending (its disks are still being provisioned). Each phase entered is appended to
 * `status.stats.phasesTransitions`, as the platform records it.
 */
export function nextVmStatus(
  vm: Obj,
  mem: Memory,
  now: number,
  enter: (phase: string) => void,
  disksReady = true,
): Status {
  const meta = vm.metadata as Obj;
  const spec = (vm.spec ?? {}) as Obj;
  const gen = meta.generation as number | undefined;
  let status = { ...((vm.status ?? {}) as Status) };
  status.observedGeneration = gen;
  const due = now - mem.since >= mem.delay;
  const go = (phase: string) => {
    status = withTransition(status, phase, now);
    status.phase = phase;
    enter(phase);
  };
  const run = wantsRunning(spec);
  switch (status.phase) {
    case undefined:
      go('Pending');
      break;
    case 'Pending':
      if (due && disksReady) go(run ? 'Starting' : 'Stopped');
      break;
    case 'Starting':
      if (!run) go('Stopping');
      else if (due && mem.neverStart !== true) {
        go('Running');
        mem.applied = restartRelevant(spec);
        mem.restart = false;
      }
      break;
    case 'Running': {
      mem.applied ??= restartRelevant(spec);
      const pending = mem.applied !== restartRelevant(spec);
      if (!run) go('Stopping');
      else if (mem.restart === true || (pending && approval(spec) === 'Automatic')) {
        mem.restart = true;
        go('Stopping');
      }
      break;
    }
    case 'Stopping':
      if (due) go(run && mem.restart === true ? 'Starting' : 'Stopped');
      break;
    case 'Stopped':
      if (run) go('Starting');
      break;
    default:
      // Phases the simulator never enters (Migrating, Pause, ...) are left alone.
      break;
  }
  // The condition lives while a started VM runs on an outdated spec; a (re)start applies the spec.
  const outdated =
    mem.applied !== undefined &&
    mem.applied !== restartRelevant(spec) &&
    (status.phase === 'Running' || status.phase === 'Stopping');
  const others = withoutAwaiting(status.conditions);
  const existing = (status.conditions ?? []).find((c) => c.type === AWAITING_RESTART);
  status.conditions = outdated ? [...others, existing ?? awaiting(gen, now)] : others;
  return status;
}

/**
 * The node a newly started VM is placed on: the one of `nodes` with the fewest VMs of its group (a
 * pool), the first of them on a tie, the way a spreading scheduler would. Deterministic, so tests
 * can predict where replicas land.
 */
export function placeOn(nodes: readonly string[], load: ReadonlyMap<string, number>): string {
  let best = nodes[0] ?? '';
  for (const n of nodes) if ((load.get(n) ?? 0) < (load.get(best) ?? 0)) best = n;
  return best;
}
