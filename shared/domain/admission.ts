/**
 * Admission decisions for pools and their `/scale` subresource.
 * @module
 */
import type { VirtualMachinePool } from '../api/index.js';
import { recordedTargets } from './targets.js';
import { validatePool } from './validation.js';

/** The verdict of an admission check. */
export type Decision =
  { readonly allowed: true } | { readonly allowed: false; readonly message: string };

const ALLOW: Decision = { allowed: true };

/** The reference's denial of a `/scale` decrease under Explicit. */
export function explicitScaleMessage(pool: string): string {
  return `VirtualMachinePool "${pool}" uses scaleDownPolicy Explicit: decreasing replicas through the scale subresource is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.`;
}

/** The denial of an unaddressed `spec.replicas` decrease under Explicit (the reference allows it). */
export function explicitReplicasMessage(pool: string): string {
  return `VirtualMachinePool "${pool}" uses scaleDownPolicy Explicit: decreasing spec.replicas without naming the replicas to remove is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.`;
}

/** `/scale` UPDATE: a decrease is denied under Explicit; anything else is allowed. */
export function decideScaleUpdate(
  pool: VirtualMachinePool | undefined,
  oldReplicas: number,
  newReplicas: number,
): Decision {
  if (pool === undefined || newReplicas >= oldReplicas) return ALLOW;
  if (pool.spec.scaleDownPolicy !== 'Explicit') return ALLOW;
  return { allowed: false, message: explicitScaleMessage(pool.metadata.name ?? '') };
}

/**
 * Pool CREATE or UPDATE: the spec must be valid, and under Explicit a decrease of `spec.replicas` must
 * be covered by targets newly recorded by scaledownwith in the same write.
 */
export function decidePoolWrite(
  pool: VirtualMachinePool,
  old: VirtualMachinePool | undefined,
): Decision {
  const first = validatePool(pool)[0];
  if (first !== undefined) return { allowed: false, message: first.message };
  if (old === undefined || pool.spec.scaleDownPolicy !== 'Explicit') return ALLOW;
  const decrease = (old.spec.replicas ?? 0) - (pool.spec.replicas ?? 0);
  if (decrease <= 0) return ALLOW;
  const before = new Set(recordedTargets(old).map((t) => t.uid));
  const added = recordedTargets(pool).filter((t) => !before.has(t.uid)).length;
  return added >= decrease
    ? ALLOW
    : { allowed: false, message: explicitReplicasMessage(pool.metadata.name ?? '') };
}
