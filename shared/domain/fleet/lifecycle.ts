/**
 * Where a member is in its life, read from what the platform reports: whether it should run, since
 * when it has been trying to start, since when it has been Running. The clock is the caller's.
 * @module
 */
import type { VirtualMachine } from '../../api/index.js';
import { AWAITING_RESTART, keys } from '../../api/index.js';
import { conditionOf, isTerminating, nameOf } from './membership.js';

/** Phases of a member trying to run: not (yet, or no longer) Running, and not stopped. */
const TRYING: ReadonlySet<string | undefined> = new Set([
  undefined,
  'Pending',
  'Starting',
  'Degraded',
]);

/** True for a warm standby member (label `vmpool.virtualization.deckhouse.io/standby: "true"`). */
export function isStandby(vm: VirtualMachine): boolean {
  return vm.metadata.labels?.[keys.standby] === 'true';
}

/** The run policy keeps the member running (`AlwaysOff` and `Manual` stop it on purpose). */
export function wantsRunning(vm: VirtualMachine): boolean {
  const p = vm.spec.runPolicy;
  return p !== 'AlwaysOff' && p !== 'Manual';
}

/** Serving: Running, or Running while it live-migrates. */
export function isUp(vm: VirtualMachine): boolean {
  const phase = vm.status?.phase;
  return !isTerminating(vm) && (phase === 'Running' || phase === 'Migrating');
}

/**
 * Stopped on purpose: its run policy stops it, or it is Stopped or Paused under a policy a user may
 * stop (only `AlwaysOn` is started again by the platform, so a Stopped `AlwaysOn` member restarts).
 */
export function stoppedOnPurpose(vm: VirtualMachine): boolean {
  if (!wantsRunning(vm)) return true;
  const phase = vm.status?.phase;
  return (phase === 'Stopped' || phase === 'Pause') && vm.spec.runPolicy !== 'AlwaysOn';
}

const time = (text: string | null | undefined): number | undefined => {
  const t = text === undefined || text === null ? NaN : Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
};

/**
 * When the member's current attempt to run began (ms since the epoch), or undefined when it is not
 * trying to run (Running, stopped, Terminating, or a history that has not caught up with its phase).
 * The attempt is the run of Pending/Starting/Degraded phases at the end of the platform's phase
 * history; a member never out of them has been trying since its creation. Without a history
 * (`status.stats.phasesTransitions`), creation is the only start known.
 */
export function tryingSince(vm: VirtualMachine): number | undefined {
  if (isTerminating(vm) || stoppedOnPurpose(vm) || !TRYING.has(vm.status?.phase)) return undefined;
  const history = vm.status?.stats?.phasesTransitions ?? [];
  let since: number | undefined;
  let i = history.length - 1;
  for (; i >= 0 && TRYING.has(history[i]?.phase ?? undefined); i--)
    since = time(history[i]?.timestamp) ?? since;
  return i < 0 ? (time(vm.metadata.creationTimestamp) ?? since) : since;
}

/** When a Running member last became Running (ms), falling back to its creation. */
export function runningSince(vm: VirtualMachine): number | undefined {
  if (vm.status?.phase !== 'Running' || isTerminating(vm)) return undefined;
  const history = vm.status.stats?.phasesTransitions ?? [];
  for (let i = history.length - 1; i >= 0; i--)
    if (history[i]?.phase === 'Running') return time(history[i]?.timestamp);
  return time(vm.metadata.creationTimestamp);
}

/**
 * The members Running longest first, then by name (not Running: as if since the epoch). Each
 * member's start is parsed once, not at every comparison of the sort.
 */
export function runningLongestFirst(vms: readonly VirtualMachine[]): VirtualMachine[] {
  return vms
    .map((vm) => ({ vm, since: runningSince(vm) ?? 0, name: nameOf(vm) }))
    .sort((a, b) => a.since - b.since || (a.name < b.name ? -1 : 1))
    .map((x) => x.vm);
}

/**
 * When a Running member becomes available: Running for `minReadyMs` (0: at once). Undefined when it
 * is not Running.
 */
export function availableAt(vm: VirtualMachine, minReadyMs: number): number | undefined {
  if (vm.status?.phase !== 'Running' || isTerminating(vm)) return undefined;
  if (minReadyMs <= 0) return -Infinity;
  return (runningSince(vm) ?? -Infinity) + minReadyMs;
}

/** When a member that tries to run is judged unhealthy under `timeoutMs`; undefined when it is not. */
export function unhealthyAt(vm: VirtualMachine, timeoutMs: number): number | undefined {
  const since = tryingSince(vm);
  return since === undefined ? undefined : since + timeoutMs;
}

/** The member's age at `now` (ms), from its creation; 0 when unknown. */
export function ageOf(vm: VirtualMachine, now: Date): number {
  const born = time(vm.metadata.creationTimestamp);
  return born === undefined ? 0 : now.getTime() - born;
}

/** True while a member waits for a restart to apply its patched spec. */
export function awaitingRestart(vm: VirtualMachine): boolean {
  return conditionOf(vm, AWAITING_RESTART)?.status === 'True';
}
