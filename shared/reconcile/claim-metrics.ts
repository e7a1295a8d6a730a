/**
 * What a reconcile tells the claim metrics: each planned pass, the pool's claims by phase (when it
 * read them) and its idle members; each Bound status written, the time its claim waited; a pool
 * deleted, so its series go with it.
 * @module
 */
import type { VirtualMachineClaim, VirtualMachinePool } from '../api/index.js';
import type { Action, Plan } from '../domain/index.js';
import { claimPhases, nameOf, usesClaims } from '../domain/index.js';

/** Where a reconcile reports claims (the functions' metrics; absent: nowhere). */
export interface ClaimObserver {
  /**
   * A pool's claims by phase and its idle members, as its latest plan left them; `phases` undefined
   * when that plan did not read the claims (the latest one that did still stands). `uid` tells a
   * pool created again under the same name from the one before; `uses` whether the pool uses claims
   * now (one that never did has no series to report).
   */
  pool(
    namespace: string,
    pool: string,
    uid: string,
    phases: Readonly<Record<string, number>> | undefined,
    idle: number,
    uses: boolean,
  ): void;
  /** A claim's Bound status was written, `seconds` after the claim was created. */
  bound(namespace: string, pool: string, seconds: number): void;
  /**
   * The pool is gone: whatever was reported of it goes too, and a report of it read before it went
   * (a resync window's list) is ignored.
   */
  gone(namespace: string, pool: string): void;
  /**
   * The pools of the whole cluster, as a complete listing saw them (`namespace/name`): the series of
   * any other pool go, for a pool deleted while another instance took its events.
   */
  retain(pools: ReadonlySet<string>): void;
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
  const uses = usesClaims(pool, phases, p.status);
  observer.pool(namespace, name, pool.metadata.uid ?? '', phases, p.status.idleReplicas ?? 0, uses);
  return (a) => {
    if (a.kind !== 'claimStatus' || a.phase !== 'Bound') return;
    const created = Date.parse(a.claim.metadata.creationTimestamp ?? '');
    const bound = Date.parse(a.claim.status?.boundAt ?? '');
    if (!Number.isNaN(created) && !Number.isNaN(bound))
      observer.bound(namespace, name, (bound - created) / 1000);
  };
}
