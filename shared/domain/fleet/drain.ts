/**
 * Drain before removal (`spec.scaleDown.drainTimeout`): a leaving member is first annotated
 * drain-requested with the time, and deleted once annotated drained or when the timeout has passed.
 * Every piece of drain state lives on the VM (the request time) and in the pool's recorded intent
 * (who leaves), never in memory, so a crash anywhere resumes the same drain.
 * @module
 */
import type { VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { parseDuration } from '../formats/index.js';
import { nameOf } from './membership.js';
import { rfc3339 } from '../formats/index.js';

/** The pool's drain timeout in ms; undefined when members are deleted at once (absent, 0, invalid). */
export function drainTimeoutMs(pool: VirtualMachinePool): number | undefined {
  const text = pool.spec.scaleDown?.drainTimeout;
  const ms = text === undefined ? undefined : parseDuration(text);
  return ms === undefined || ms <= 0 ? undefined : ms;
}

/** True when a member carries the drain-requested annotation (whatever its value). */
export function isDraining(vm: VirtualMachine): boolean {
  return vm.metadata.annotations?.[keys.drainRequested] !== undefined;
}

/** What to do next with a leaving member. */
export type DrainStep =
  /** Delete it now: no drain configured, or it was drained. */
  | { readonly kind: 'delete'; readonly drained: boolean }
  /** Delete it now: the drain timed out. */
  | { readonly kind: 'timedOut' }
  /** Ask it to drain (annotate with `now`; an unreadable request time is asked again). */
  | { readonly kind: 'request' }
  /** It drains: look again at `deadline`. */
  | { readonly kind: 'wait'; readonly deadline: Date };

/** The next step of a leaving member's drain, given the pool's timeout (ms) and the clock. */
export function drainStep(vm: VirtualMachine, timeoutMs: number | undefined, now: Date): DrainStep {
  const requested = vm.metadata.annotations?.[keys.drainRequested];
  if (requested === undefined)
    return timeoutMs === undefined ? { kind: 'delete', drained: false } : { kind: 'request' };
  if (vm.metadata.annotations?.[keys.drained] === 'true') return { kind: 'delete', drained: true };
  // Drains asked for under a timeout since removed end now, as "absent = delete at once" says.
  if (timeoutMs === undefined) return { kind: 'delete', drained: false };
  const since = Date.parse(requested);
  if (!/^\d{4}-\d\d-\d\dT/.test(requested) || Number.isNaN(since)) return { kind: 'request' };
  const deadline = new Date(since + timeoutMs);
  return now.getTime() >= deadline.getTime() ? { kind: 'timedOut' } : { kind: 'wait', deadline };
}

/** The member asked to drain at `now`; a `drained` mark left from before is dropped (a fresh ask). */
export function requestDrain(vm: VirtualMachine, now: Date): VirtualMachine {
  const annotations: Record<string, string> = {
    ...vm.metadata.annotations,
    [keys.drainRequested]: rfc3339(now),
  };
  delete annotations[keys.drained];
  return { ...vm, metadata: { ...vm.metadata, annotations } };
}

/** The member with its drain cancelled: both drain annotations removed. */
export function cancelDrain(vm: VirtualMachine): VirtualMachine {
  const annotations = { ...vm.metadata.annotations };
  delete annotations[keys.drainRequested];
  delete annotations[keys.drained];
  return { ...vm, metadata: { ...vm.metadata, annotations } };
}

/**
 * The order in which a scale-up takes leaving members back: those not yet drained first (their work
 * is not finished), then the latest asked (not asked yet counts as latest), then by name.
 */
export function byCancelOrder(a: VirtualMachine, b: VirtualMachine): number {
  const da = a.metadata.annotations?.[keys.drained] === 'true' ? 1 : 0;
  const db = b.metadata.annotations?.[keys.drained] === 'true' ? 1 : 0;
  if (da !== db) return da - db;
  const ra = a.metadata.annotations?.[keys.drainRequested] ?? '~';
  const rb = b.metadata.annotations?.[keys.drainRequested] ?? '~';
  if (ra !== rb) return ra < rb ? 1 : -1;
  return nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0;
}
