/**
 * The disruption budget (`spec.rollout.maxUnavailable`): how many members may be restarted, replaced
 * or healed at once. Members already out of service count against it, as StatefulSet and KubeVirt
 * count unavailable pods and VMs, so a rollout that breaks what it touches stalls instead of breaking
 * the rest.
 * @module
 */
import type { VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { isUp, stoppedOnPurpose, wantsRunning } from './lifecycle.js';
import { isTerminating } from './membership.js';

/** The budget of a pool with self-healing and no `rollout.maxUnavailable`: a quarter of its members. */
const HEALING_BUDGET = '25%';

/** How many unhealthy members healing tolerates without `spec.healing.maxUnhealthy`: half. */
export const HEALING_MAX_UNHEALTHY = '50%';

/**
 * At most this many members disrupted at once: `rollout.maxUnavailable`, else {@link HEALING_BUDGET}
 * when self-healing is set (so a fault that strands every member is not answered by replacing all
 * of them at once), else Infinity (all at once, the reference's behaviour).
 */
export function maxUnavailableOf(pool: VirtualMachinePool): number {
  const v =
    pool.spec.rollout?.maxUnavailable ??
    (pool.spec.healing === undefined ? undefined : HEALING_BUDGET);
  return v === undefined ? Infinity : scaledOf(v, sizeOf(pool));
}

/**
 * Healing's circuit breaker: with more unhealthy members than this, healing replaces none
 * (`spec.healing.maxUnhealthy`, default {@link HEALING_MAX_UNHEALTHY}).
 */
export function maxUnhealthyOf(pool: VirtualMachinePool): number {
  return scaledOf(pool.spec.healing?.maxUnhealthy ?? HEALING_MAX_UNHEALTHY, sizeOf(pool));
}

/** The members a pool asks for: `spec.replicas` plus `standby.replicas`. */
export function sizeOf(pool: VirtualMachinePool): number {
  return (pool.spec.replicas ?? 0) + (pool.spec.standby?.replicas ?? 0);
}

/**
 * An integer or a percentage of `total` (rounded down), at least 1. A malformed value (admission
 * refuses it) is read as 1, the most careful reading of a budget and of a breaker alike.
 */
function scaledOf(v: number | string, total: number): number {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 1 ? v : 1;
  const pct = /^(\d{1,3})%$/.exec(v);
  if (pct === null) return 1;
  return Math.max(1, Math.floor((total * Math.min(100, Number(pct[1]))) / 100));
}

/** A rollout step started on the member and not finished: patched, not yet marked updated. */
function inRollout(vm: VirtualMachine, hash: string): boolean {
  return (
    vm.metadata.annotations?.[keys.patchedTemplateHash] === hash &&
    vm.metadata.labels?.[keys.templateHash] !== hash
  );
}

/**
 * How a member weighs on the budget: `down` when it should serve and does not (Terminating, starting,
 * restarting, failing), `updating` when it serves but a restart for the new revision is pending or in
 * progress, `none` when it serves or is stopped on purpose.
 */
export function disruptionOf(vm: VirtualMachine, hash: string): 'down' | 'updating' | 'none' {
  if (isTerminating(vm)) return 'down';
  if (!wantsRunning(vm)) return 'none';
  // Before the stopped-on-purpose test: a restart may pass through phase Stopped.
  if (inRollout(vm, hash)) return isUp(vm) ? 'updating' : 'down';
  if (stoppedOnPurpose(vm)) return 'none';
  return isUp(vm) ? 'none' : 'down';
}

/**
 * The budget a pool's members take: `busy` members out of service or mid-update that vmpool is
 * acting on (or waiting for), and `broken` ones judged unhealthy and not yet being replaced (they
 * count against a rollout, not against healing them).
 */
export function disruptionLoad(
  members: readonly VirtualMachine[],
  hash: string,
  unhealthy: (m: VirtualMachine) => boolean,
): { busy: number; broken: number } {
  let busy = 0;
  let broken = 0;
  for (const m of members) {
    const d = disruptionOf(m, hash);
    if (d === 'none') continue;
    if (d === 'down' && unhealthy(m)) broken++;
    else busy++;
  }
  return { busy, broken };
}
