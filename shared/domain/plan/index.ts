/**
 * `plan(observed, now, rand)`: everything a reconcile decides for one pool, as ordered actions plus
 * the new status carrying the intent to record before any of them runs. A pipeline of pure steps,
 * in the order {@link plan} calls them: observe → claims → split (replicas, standby) → count → sides →
 * replace (healing, lifetime) → leave (drain or delete) → standby → roster → bind disks (disks/) →
 * updates → order (batches.ts) → intent → status (roster.ts, status.ts).
 * @module
 */
import type { Intent, PoolStatus, VirtualMachine } from '../../api/index.js';
import type { Action } from './actions.js';
import { isFenced } from './actions.js';
import type { ClaimsPlan } from './claims.js';
import { decideClaims } from './claims.js';
import { bindDisks } from '../disks/index.js';
import { decideCount } from './count.js';
import type { ActionEvent } from './events.js';
import { decideLeave } from './leave.js';
import { nameOf } from '../fleet/index.js';
import type { Rand } from '../formats/index.js';
import type { Observed } from './observe.js';
import { observe } from './observe.js';
import type { Split } from './partition.js';
import { splitStandby } from './partition.js';
import { decideReplace } from './replace.js';
import { afterCount, replacedBySide } from './sides.js';
import { intentOf, nextAvailable, order, promotable, rosterOf, statusFacts } from './roster.js';
import { decideStandby } from './standby.js';
import { computeStatus, membersAfterDeletes, sameStatus, withoutDoneDeletes } from './status.js';
import { memberUpdates } from './updates.js';

export * from './actions.js';
export * from './batches.js';
export * from './blocked.js';
export * from './claim-status.js';
export * from './claims.js';
export * from './events.js';
export { createsStillIntended } from './intent.js';
export * from './malformed.js';
export * from './preview.js';
export * from './status.js';
export type { MemberRef, Observed, View } from './observe.js';
export { observe } from './observe.js';
export type { Departure } from './count.js';
export { decideCount } from './count.js';
export { newMember } from '../fleet/index.js';

/** What a reconcile should do. */
export interface Plan {
  /** Side effects in execution order: {@link batches} one after the other. */
  readonly actions: Action[];
  /** The actions as the executor runs them: batches in order, each batch's tasks side by side. */
  readonly batches: Action[][];
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
  /** A deadline ahead (a drain, a startup timeout, an age, minReadySeconds): reconcile again then. */
  readonly recheckAt?: Date;
}

/** Plans one reconcile of a pool. Pure: `now` and `rand` are the only outside inputs. */
export function plan(obs: Observed, now: Date, rand: Rand): Plan {
  const { pool } = obs;
  // Kubernetes' garbage collector removes members and pool disks; acting now would only race it.
  if (pool.metadata.deletionTimestamp !== undefined) return idle(pool.status ?? {}, false);
  const observed = observe(obs);
  const claims = decideClaims({
    view: observed,
    claims: obs.claims ?? [],
    unreadable: new Set(obs.unreadableClaims ?? []),
    now,
  });
  // Every later step sees the members as the claims leave them (bound ones marked, kept).
  const view = { ...observed, members: claims.members, live: claims.live };
  const split = splitStandby(view);
  if (pool.spec.paused === true)
    return paused(
      split,
      view.pendingCreates.filter((n) => !view.bound.has(n)),
      now,
      claims,
    );

  const count = decideCount({
    ...split.active,
    rand,
    promotable: promotable(split),
    target: claims.target,
  });
  const sides = afterCount({ split, count, taken: view.taken });
  const replace = decideReplace({ ...view, staying: sides.staying, creates: sides.creates, now });
  const replaced = replacedBySide({ split, promoted: sides.promoted, victims: replace.victims });
  const departures = [...count.departures, ...replaced.replicas];
  const leave = decideLeave({ pool, departures, now });
  const standby = decideStandby({
    pool,
    hash: view.hash,
    split,
    promoted: sides.promoted,
    replaced: replaced.standby,
    removals: leave.deletes,
    // One burst for the replicas and the standby together.
    burst: Math.max(0, view.burst - count.creates.length),
    bound: view.bound,
    taken: sides.taken,
    rand,
  });
  const roster = rosterOf({ count, replace, standby });
  const disks = bindDisks({ ...view, roster, rand });
  const updates = memberUpdates({
    pool,
    hash: view.hash,
    staying: roster.staying,
    refs: disks.refs,
    roles: { standby: new Set(standby.staying.map(nameOf)), budget: replace.budgetLeft },
  });
  const batches = order({ view, now, count, leave, standby, disks, updates, claims });
  const actions = batches.flat();
  const intent = intentOf({
    view,
    count,
    replace,
    standby,
    bindings: disks.bindings,
    claims: claims.intent,
  });
  const removed = new Set([...count.leaving, ...replace.victims.map((d) => nameOf(d.vm))]);
  const status = computeStatus({
    pool,
    // The status the fence writes says what the pass leaves: the pass after writes nothing more.
    members: membersAfterDeletes(split.active.members, actions, now),
    hash: view.hash,
    intent,
    now,
    desired: claims.target,
    leaving: {
      protectedHeld: count.protectedHeld,
      draining: leave.draining,
      claims: claimCounts(claims, removed),
      ...statusFacts(view, split, replace),
    },
  });
  const writeStatus = !sameStatus(
    status,
    withoutDoneDeletes(pool.status, () => liveUids(view.live.values())),
  );
  const fenced = actions.some(isFenced);
  const due = [
    leave.recheckAt?.getTime(),
    replace.recheckAt,
    nextAvailable(split, now),
    claims.recheckAt,
  ];
  const recheck = Math.min(...due.map((t) => t ?? Infinity));
  return {
    actions,
    batches,
    status,
    writeStatus,
    fenced,
    warnings: [...view.warnings, ...disks.warnings, ...count.warnings],
    events: writeStatus || fenced ? [...count.warnings.map(invalidCost), ...replace.events] : [],
    ...(recheck === Infinity ? {} : { recheckAt: new Date(recheck) }),
  };
}

/** The uids of the pool's live members (Terminating ones left out). */
function liveUids(live: Iterable<VirtualMachine>): Set<string> {
  const out = new Set<string>();
  for (const m of live) out.add(m.metadata.uid ?? '');
  return out;
}

/** A plan that does nothing and writes `status` when it differs. */
function idle(status: PoolStatus, writeStatus: boolean): Plan {
  return { actions: [], batches: [], status, writeStatus, fenced: false, warnings: [], events: [] };
}

/**
 * `spec.paused`: nothing is created, deleted or updated; status still reports the members, with
 * `Paused=True`. Recorded creates not made yet are dropped (a pause stops creation within the burst
 * under way; unpausing records fresh ones), but for those with a disk recorded for them (see the
 * scale step); the rest of the intent is kept for unpausing.
 */
function paused(split: Split, pending: readonly string[], now: Date, claims: ClaimsPlan): Plan {
  const { pool } = split.active;
  const prev = pool.status ?? {};
  const intent = withoutCreates(prev.intent ?? {}, new Set(pending));
  const stored = prev.conditions?.find((c) => c.type === 'Healing');
  const status = computeStatus({
    pool,
    members: split.active.members,
    hash: split.active.hash,
    intent,
    now,
    desired: claims.target,
    leaving: {
      protectedHeld: prev.heldReplicas ?? 0,
      draining: prev.drainingReplicas ?? 0,
      claims: claimCounts(claims, new Set()),
      ...statusFacts(split.active, split, {
        unhealthy: prev.unhealthyReplicas ?? 0,
        ...(prev.healing === undefined ? {} : { healing: prev.healing }),
        ...(stored === undefined ? {} : { condition: stored }),
      }),
    },
  });
  // Claims still learn why they wait (PoolPaused), and finish a binding the member already shows.
  const statuses = [...claims.statuses];
  const writeStatus = !sameStatus(
    status,
    withoutDoneDeletes(prev, () => liveUids([...split.active.live.values(), ...split.standbyLive])),
  );
  return statuses.length === 0
    ? idle(status, writeStatus)
    : { ...idle(status, writeStatus), actions: statuses, batches: [statuses] };
}

/** What status reports of claims: members bound, claims waiting, idle members none of `removed`. */
function claimCounts(
  claims: Pick<ClaimsPlan, 'claimed' | 'idle' | 'pending'>,
  removed: ReadonlySet<string>,
): { claimed: number; idle: number; pending: number } {
  return {
    claimed: claims.claimed,
    pending: claims.pending,
    idle:
      removed.size === 0
        ? claims.idle.length
        : claims.idle.filter((m) => !removed.has(nameOf(m))).length,
  };
}

/** An intent without the creates in `drop` (none of them bound to a disk). */
function withoutCreates(intent: Intent, drop: ReadonlySet<string>): Intent {
  if (drop.size === 0) return intent;
  const keep = (n: string): boolean => !drop.has(n);
  return {
    ...intent,
    ...(intent.creates === undefined ? {} : { creates: intent.creates.filter(keep) }),
    ...(intent.standbyCreates === undefined
      ? {}
      : { standbyCreates: intent.standbyCreates.filter(keep) }),
  };
}

function invalidCost(note: string): ActionEvent {
  return { type: 'Warning', reason: 'InvalidDeletionCost', note, action: 'ScaleDown' };
}
