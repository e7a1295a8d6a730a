/**
 * Claims as a member shows them: a claimed member carries its claim's name and uid (annotations),
 * the release the claim asked for, and the `claimed` label. A claimed member is kept like a
 * protected one: never a victim of a scale-down, healing, lifetime, a standby change or a rollout.
 * @module
 */
import type { OnRelease, PoolClaims, VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { isDraining } from './drain.js';
import { availableAt, isStandby } from './lifecycle.js';
import { isTerminating } from './membership.js';
import { isProtected } from './victims.js';

/** The claim a member is bound to, as its marks say. */
export interface ClaimMark {
  readonly name: string;
  readonly uid: string;
  /** The release recorded at binding (Delete when unreadable: the safe default of the API). */
  readonly onRelease: OnRelease;
}

/** The claim marks of a member, or undefined when it carries none (both name and uid are needed). */
export function claimOf(vm: VirtualMachine): ClaimMark | undefined {
  const a = vm.metadata.annotations;
  const name = a?.[keys.claimedBy];
  const uid = a?.[keys.claimUid];
  if (name === undefined || name === '' || uid === undefined || uid === '') return undefined;
  return { name, uid, onRelease: a?.[keys.onRelease] === 'Recycle' ? 'Recycle' : 'Delete' };
}

/** True when a member is bound to a claim. */
export function isClaimed(vm: VirtualMachine): boolean {
  return claimOf(vm) !== undefined;
}

/**
 * True for a member no scale-down, replacement or standby change may remove: protected (by a
 * person or an agent) or claimed (by a holder).
 */
export function isKept(vm: VirtualMachine): boolean {
  return isProtected(vm) || isClaimed(vm);
}

/**
 * True for a member a claim could take, as far as the member itself shows: Running for
 * `minReadyMs` at `now` (as availableReplicas counts), on revision `hash`, not claimed, protected,
 * draining, standby or Terminating. Whether it is recorded to leave is the plan's to add.
 */
export function isIdleMember(
  vm: VirtualMachine,
  hash: string,
  now: Date,
  minReadyMs: number,
): boolean {
  return (
    !isTerminating(vm) &&
    !isKept(vm) &&
    !isDraining(vm) &&
    !isStandby(vm) &&
    vm.metadata.labels?.[keys.templateHash] === hash &&
    (availableAt(vm, minReadyMs) ?? Infinity) <= now.getTime()
  );
}

/** The member marked for `claim`: both annotations, the release asked for, and the label. */
export function withClaimMarks(vm: VirtualMachine, claim: ClaimMark): VirtualMachine {
  return {
    ...vm,
    metadata: {
      ...vm.metadata,
      labels: { ...vm.metadata.labels, [keys.claimed]: 'true' },
      annotations: {
        ...vm.metadata.annotations,
        [keys.claimedBy]: claim.name,
        [keys.claimUid]: claim.uid,
        [keys.onRelease]: claim.onRelease,
      },
    },
  };
}

/** The member without any claim mark: an ordinary replica again. */
export function withoutClaimMarks(vm: VirtualMachine): VirtualMachine {
  const labels = { ...vm.metadata.labels };
  delete labels[keys.claimed];
  const annotations = { ...vm.metadata.annotations };
  for (const k of [keys.claimedBy, keys.claimUid, keys.onRelease]) delete annotations[k];
  const metadata: VirtualMachine['metadata'] = { ...vm.metadata, labels, annotations };
  if (Object.keys(labels).length === 0) delete metadata.labels;
  if (Object.keys(annotations).length === 0) delete metadata.annotations;
  return { ...vm, metadata };
}

/** What the effective target counts. */
export interface ClaimLoad {
  /** Live members bound to a claim (the bindings recorded or made now included). */
  readonly claimed: number;
  /** Claims of the pool still waiting for a member. */
  readonly pending: number;
}

/**
 * The replicas a pool runs: `spec.replicas` without `spec.claims`; with it,
 * `max(spec.replicas, min(claimed + pending + minIdle, maxReplicas))`: `spec.replicas` (what /scale
 * and an HPA set) stays the floor, claims grow the pool above it up to `maxReplicas`.
 */
export function effectiveTarget(
  replicas: number,
  claims: PoolClaims | undefined,
  load: ClaimLoad,
): number {
  if (claims === undefined) return replicas;
  const want = load.claimed + load.pending + claims.minIdle;
  return Math.max(replicas, Math.min(want, claims.maxReplicas));
}
