/**
 * The status a claim should have, with its `Bound` condition: written by a `claimStatus` action only
 * when it differs from the stored one (L5: a claim that waits for the same reason is not rewritten).
 * @module
 */
import type {
  ClaimPhase,
  ClaimStatus,
  Condition,
  PendingReason,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../../api/index.js';
import { canonicalJson, parseDuration, rfc3339 } from '../formats/index.js';
import { nameOf } from '../fleet/index.js';
import type { Action, ClaimStatusWrite } from './actions.js';

/** Claims oldest first, then by name: the order in which waiting claims take idle members. */
export const byClaimAge = (a: VirtualMachineClaim, b: VirtualMachineClaim): number => {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  return nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0;
};

/** Why a claim's `Bound` condition says what it says. */
export type BoundReason = 'Bound' | PendingReason | 'Expired' | 'Lost';

/** The `Bound` condition of a claim, its transition time kept while its status holds. */
function boundCondition(
  claim: VirtualMachineClaim,
  reason: BoundReason,
  message: string,
  now: Date,
): Condition {
  const status = reason === 'Bound' ? 'True' : 'False';
  const prev = claim.status?.conditions?.find((c) => c.type === 'Bound');
  const since = prev?.status === status ? prev.lastTransitionTime : undefined;
  const generation = claim.metadata.generation;
  return {
    type: 'Bound',
    status,
    reason,
    message,
    lastTransitionTime: since ?? rfc3339(now),
    ...(generation === undefined ? {} : { observedGeneration: generation }),
  };
}

function withCondition(claim: VirtualMachineClaim, c: Condition): Condition[] {
  return [...(claim.status?.conditions ?? []).filter((x) => x.type !== 'Bound'), c];
}

function generationOf(claim: VirtualMachineClaim): Pick<ClaimStatus, 'observedGeneration'> {
  const g = claim.metadata.generation;
  return g === undefined ? {} : { observedGeneration: g };
}

/**
 * When a claim bound at `now` expires: its `spec.ttl`, capped by the pool's `claims.maxTTL`; the
 * pool's maxTTL alone when the claim sets none; never when neither is set (or readable).
 */
export function expiryOf(
  claim: VirtualMachineClaim,
  pool: VirtualMachinePool,
  now: Date,
): string | undefined {
  const ttl = parseDuration(claim.spec.ttl ?? '');
  const max = parseDuration(pool.spec.claims?.maxTTL ?? '');
  const ms = Math.min(ttl ?? Infinity, max ?? Infinity);
  return ms === Infinity ? undefined : rfc3339(new Date(now.getTime() + ms));
}

/** The status of a claim bound to `vm` at `now` (kept as stored when already so). */
export function boundStatus(
  claim: VirtualMachineClaim,
  vm: VirtualMachine,
  pool: VirtualMachinePool,
  now: Date,
): ClaimStatus {
  const prev = claim.status;
  const same =
    prev?.phase === 'Bound' &&
    prev.virtualMachineName === nameOf(vm) &&
    prev.virtualMachineUid === vm.metadata.uid;
  if (same) return prev;
  const expires = expiryOf(claim, pool, now);
  const message = `Bound to VirtualMachine "${nameOf(vm)}" of VirtualMachinePool "${nameOf(pool)}"${expires === undefined ? '' : ` until ${expires}`}.`;
  return {
    phase: 'Bound',
    virtualMachineName: nameOf(vm),
    ...(vm.metadata.uid === undefined ? {} : { virtualMachineUid: vm.metadata.uid }),
    boundAt: rfc3339(now),
    ...(expires === undefined ? {} : { expiresAt: expires }),
    ...generationOf(claim),
    conditions: withCondition(claim, boundCondition(claim, 'Bound', message, now)),
  };
}

/** The status of a claim still waiting for a member, and why. */
export function pendingStatus(
  claim: VirtualMachineClaim,
  reason: PendingReason,
  message: string,
  now: Date,
): ClaimStatus {
  return {
    phase: 'Pending',
    ...generationOf(claim),
    conditions: withCondition(claim, boundCondition(claim, reason, message, now)),
  };
}

/** The status of a claim that ended (Expired, Lost): what it was bound to stays for its holder. */
export function endedStatus(
  claim: VirtualMachineClaim,
  phase: Extract<ClaimPhase, 'Expired' | 'Lost'>,
  message: string,
  now: Date,
): ClaimStatus {
  return {
    ...claim.status,
    phase,
    ...generationOf(claim),
    conditions: withCondition(claim, boundCondition(claim, phase, message, now)),
  };
}

/** The `claimStatus` action writing `status`, or undefined when the claim already says it. */
export function statusWrite(
  claim: VirtualMachineClaim,
  status: ClaimStatus,
): ClaimStatusWrite | undefined {
  if (canonicalJson(status) === canonicalJson(claim.status ?? {})) return undefined;
  return { kind: 'claimStatus', claim: { ...claim, status }, phase: status.phase ?? 'Pending' };
}

/**
 * How many claims of pool `pool` are in each phase once `writes` (a plan's claim status writes)
 * landed; a claim with no phase yet counts as Pending.
 */
export function claimPhases(
  pool: string,
  claims: readonly VirtualMachineClaim[],
  writes: readonly Action[],
): Record<ClaimPhase, number> {
  const written = new Map<string, ClaimPhase>();
  for (const w of writes)
    if (w.kind === 'claimStatus') written.set(w.claim.metadata.uid ?? '', w.phase);
  const out: Record<ClaimPhase, number> = { Pending: 0, Bound: 0, Expired: 0, Lost: 0 };
  for (const c of claims) {
    if (c.spec.poolName !== pool || c.metadata.deletionTimestamp !== undefined) continue;
    out[written.get(c.metadata.uid ?? '') ?? c.status?.phase ?? 'Pending']++;
  }
  return out;
}

/**
 * Whether `pool` uses claims: it configures them, a claim names it (`phases`, as
 * {@link claimPhases} counts them; undefined when the claims were not read), or its planned
 * `status` counts a claimed member or a waiting claim. A claim binds idle members of any pool, so
 * the configuration alone does not say.
 */
export function usesClaims(
  pool: VirtualMachinePool,
  phases: Readonly<Record<string, number>> | undefined,
  status: Readonly<{ claimedReplicas?: number; pendingClaims?: number }>,
): boolean {
  if (pool.spec.claims !== undefined) return true;
  if ((status.claimedReplicas ?? 0) > 0 || (status.pendingClaims ?? 0) > 0) return true;
  return phases !== undefined && Object.values(phases).some((n) => n > 0);
}

/** The words of each pending reason, for the claim's condition. */
export function pendingMessage(reason: PendingReason, pool: string, cap: number): string {
  switch (reason) {
    case 'NoIdleMember':
      return `No idle member of VirtualMachinePool "${pool}" yet: it is growing or its members are starting.`;
    case 'PoolAtMaximum':
      return `VirtualMachinePool "${pool}" is at its maximum (${cap} replicas) and has no idle member: the claim binds when a member is released or the maximum raised.`;
    case 'PoolPaused':
      return `VirtualMachinePool "${pool}" is paused (spec.paused: true): nothing is bound until it is unpaused.`;
    case 'PoolNotFound':
      return `VirtualMachinePool "${pool}" does not exist in this namespace: the claim binds once it is created.`;
  }
}

/**
 * The status write of a claim whose pool does not exist (none when it already says so): Pending
 * with PoolNotFound, or Lost when it was Bound (the pool's deletion took its member). An ended
 * claim (Expired, Lost) keeps its status.
 */
export function orphanStatus(claim: VirtualMachineClaim, now: Date): ClaimStatusWrite | undefined {
  const phase = claim.status?.phase;
  if (phase === 'Expired' || phase === 'Lost' || claim.metadata.deletionTimestamp !== undefined)
    return undefined;
  const pool = claim.spec.poolName;
  if (phase === 'Bound')
    return statusWrite(
      claim,
      endedStatus(
        claim,
        'Lost',
        `VirtualMachinePool "${pool}" is gone, and its members with it: create a new claim for another pool.`,
        now,
      ),
    );
  const message = pendingMessage('PoolNotFound', pool, 0);
  return statusWrite(claim, pendingStatus(claim, 'PoolNotFound', message, now));
}

/** Why a claim expired, for its condition. */
export function expiredMessage(c: VirtualMachineClaim): string {
  const vm = c.status?.virtualMachineName ?? '';
  return `Expired at ${c.status?.expiresAt ?? ''}: VirtualMachine "${vm}" was released.`;
}

/** Why a claim is Lost, for its condition. */
export function lostMessage(c: VirtualMachineClaim): string {
  const vm = c.status?.virtualMachineName ?? '';
  return `VirtualMachine "${vm}" is gone or no longer bound to this claim (deleted by a person?): create a new claim for another member.`;
}
