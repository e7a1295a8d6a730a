/**
 * What a reconcile tells the claim metrics: each planned pass, the pool's claims by phase (when it
 * read them) and its idle members; each Bound status written, the time its claim waited.
 * @module
 */
import type { VirtualMachineClaim } from '../api/index.js';
import type { Action, Plan } from '../domain/index.js';
import { claimPhases } from '../domain/index.js';

/** Where a reconcile reports claims (the functions' metrics; absent: nowhere). */
export interface ClaimObserver {
  /**
   * A pool's claims by phase and its idle members, as its latest plan left them; `phases` undefined
   * when that plan did not read the claims (the latest one that did still stands).
   */
  pool(
    namespace: string,
    pool: string,
    phases: Readonly<Record<string, number>> | undefined,
    idle: number,
  ): void;
  /** A claim's Bound status was written, `seconds` after the claim was created. */
  bound(namespace: string, pool: string, seconds: number): void;
}

/** Reports a planned pass; returns the hook that reports the Bound statuses its actions write. */
export function observeClaims(
  observer: ClaimObserver | undefined,
  namespace: string,
  pool: string,
  claims: readonly VirtualMachineClaim[] | undefined,
  p: Plan,
): ((a: Action) => void) | undefined {
  if (observer === undefined) return undefined;
  const phases = claims === undefined ? undefined : claimPhases(pool, claims, p.actions);
  observer.pool(namespace, pool, phases, p.status.idleReplicas ?? 0);
  return (a) => {
    if (a.kind !== 'claimStatus' || a.phase !== 'Bound') return;
    const created = Date.parse(a.claim.metadata.creationTimestamp ?? '');
    const bound = Date.parse(a.claim.status?.boundAt ?? '');
    if (!Number.isNaN(created) && !Number.isNaN(bound))
      observer.bound(namespace, pool, (bound - created) / 1000);
  };
}
