/**
 * What a reconcile tells the claim metrics: each planned pass, the pool's claims by phase (when it
 * read them) and its idle members; each Bound status written, the time its claim waited; a pool
 * deleted, so its series go with it.
 * @module
 */
import type { VirtualMachineClaim, VirtualMachinePool } from '../api/index.js';
import type { Action, Plan } from '../domain/index.js';
import { claimPhases, nameOf } from '../domain/index.js';

/** Where a reconcile reports claims (the functions' metrics; absent: nowhere). */
export interface ClaimObserver {
  /**
   * A pool's claims by phase and its idle members, as its latest plan left them; `phases` undefined
   * when that plan did not read the claims (the latest one that did still stands). `uses` says
   * whether the pool uses claims now: one that never did has no series to report.
   */
  pool(
    namespace: string,
    pool: string,
    phases: Readonly<Record<string, number>> | undefined,
    idle: number,
    uses: boolean,
  ): void;
  /** A claim's Bound status was written, `seconds` after the claim was created. */
  bound(namespace: string, pool: string, seconds: number): void;
  /** The pool is gone: whatever was reported of it goes too. */
  gone(namespace: string, pool: string): void;
}

/**
 * Whether a pool uses claims: it configures them, or a claim names it, or its plan counts a claimed
 * member or a waiting claim. A claim binds idle members of any pool, so the configuration alone
 * does not say.
 */
function usesClaims(
  pool: VirtualMachinePool,
  phases: Readonly<Record<string, number>> | undefined,
  p: Plan,
): boolean {
  if (pool.spec.claims !== undefined) return true;
  if ((p.status.claimedReplicas ?? 0) > 0 || (p.status.pendingClaims ?? 0) > 0) return true;
  return phases !== undefined && Object.values(phases).some((n) => n > 0);
}

/** Reports a planned pass; returns the hook that reports the Bound statuses its actions write. */
export function observeClaims(
  observer: ClaimObserver | undefined,
  pool: VirtualMachinePool,
  claims: readonly VirtualMachineClaim[] | undefined,
  p: Plan,
): ((a: Action) => void) | undefined {
  if (observer === undefined) return undefined;
  const namespace = pool.metadata.namespace ?? '';
  const name = nameOf(pool);
  const phases = claims === undefined ? undefined : claimPhases(name, claims, p.actions);
  observer.pool(namespace, name, phases, p.status.idleReplicas ?? 0, usesClaims(pool, phases, p));
  return (a) => {
    if (a.kind !== 'claimStatus' || a.phase !== 'Bound') return;
    const created = Date.parse(a.claim.metadata.creationTimestamp ?? '');
    const bound = Date.parse(a.claim.status?.boundAt ?? '');
    if (!Number.isNaN(created) && !Number.isNaN(bound))
      observer.bound(namespace, name, (bound - created) / 1000);
  };
}
