/**
 * `plan(observed, now, rand)`: everything a reconcile decides for one pool, as ordered actions plus
 * the new status carrying the intent to record before any of them runs. A pipeline of pure steps:
 * observe → count → leave (drain or delete) → bind disks → updates → order and status.
 * @module
 */
import type { PoolStatus } from '../api/index.js';
import type { Action, ActionEvent } from './actions.js';
import { isFenced } from './actions.js';
import { bindDisks } from './bind.js';
import { decideCount } from './count.js';
import { decideLeave } from './leave.js';
import { nameOf } from './membership.js';
import type { Rand } from './names.js';
import type { Observed } from './observe.js';
import { observe } from './observe.js';
import { computeStatus, sameStatus } from './status.js';
import { diskUpdates, memberUpdates } from './updates.js';

export type { Observed } from './observe.js';
export { newMember } from './member.js';

/** What a reconcile should do. */
export interface Plan {
  /** Side effects in execution order. */
  readonly actions: Action[];
  /** The status to store, intent included. */
  readonly status: PoolStatus;
  /** The status differs from the stored one. */
  readonly writeStatus: boolean;
  /** Some action creates or deletes: the status (intent) write conditioned on the pool's
   * resourceVersion must succeed before any action runs. */
  readonly fenced: boolean;
  /** Things a human should know (a boot disk of a removed template kept, a foreign disk). */
  readonly warnings: string[];
  /** Events to record once the status write succeeded (only plans that write carry any, so L5 holds). */
  readonly events: ActionEvent[];
  /** A drain deadline ahead: reconcile again then (the resync tick is the fallback). */
  readonly recheckAt?: Date;
}

/** Plans one reconcile of a pool. Pure: `now` and `rand` are the only outside inputs. */
export function plan(obs: Observed, now: Date, rand: Rand): Plan {
  const { pool } = obs;
  // Kubernetes' garbage collector removes members and pool disks; acting now would only race it.
  if (pool.metadata.deletionTimestamp !== undefined)
    return {
      actions: [],
      status: pool.status ?? {},
      writeStatus: false,
      fenced: false,
      warnings: [],
      events: [],
    };

  const view = observe(obs);
  const count = decideCount(view, rand);
  const leave = decideLeave(view, count, now);
  const disks = bindDisks(view, count, rand);
  const inUse = new Set([...view.liveRefs, ...disks.claimed]);
  const claimedNow = new Set(disks.claims.map((c) => nameOf(c.disk)));

  // Disks a VM needs exist before it; a VM's own (Delete) disks follow it, owned by it.
  const actions: Action[] = [
    ...disks.claims,
    ...disks.retainCreates,
    ...disks.vmCreates,
    ...disks.deleteCreates,
    ...memberUpdates(view, count.staying, disks.refs),
    ...leave.drainRequests,
    ...leave.deletes,
    ...diskUpdates(view, inUse, claimedNow, now),
    ...disks.diskDeletes,
  ];
  if (count.dropTargets.length > 0) actions.push({ kind: 'dropTargets', names: count.dropTargets });

  const intent = {
    creates: [...count.creates],
    deletes: [...count.victims],
    bindings: [...disks.bindings],
  };
  const status = computeStatus(pool, view.members, view.hash, intent, now, {
    protectedHeld: count.protectedHeld,
    draining: leave.draining,
  });
  const writeStatus = !sameStatus(status, pool.status);
  const fenced = actions.some(isFenced);
  return {
    actions,
    status,
    writeStatus,
    fenced,
    warnings: [...view.warnings, ...disks.warnings, ...count.warnings],
    events: writeStatus || fenced ? count.warnings.map(invalidCost) : [],
    ...(leave.recheckAt === undefined ? {} : { recheckAt: leave.recheckAt }),
  };
}

function invalidCost(note: string): ActionEvent {
  return { type: 'Warning', reason: 'InvalidDeletionCost', note, action: 'ScaleDown' };
}
