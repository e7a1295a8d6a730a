/**
 * The pool's status and conditions, with the reference's reasons and messages.
 * @module
 */
import type {
  Condition,
  HealingState,
  Intent,
  PoolStatus,
  VirtualMachine,
  VirtualMachinePool,
} from '../../api/index.js';
import { keys } from '../../api/index.js';
import type { Action } from './actions.js';
import { canonicalJson, rfc3339 } from '../formats/index.js';
import { normalizeIntent } from './intent.js';
import {
  availableAt,
  awaitingRestart,
  isProtected,
  isReady,
  isTerminating,
  scaleSelectorOf,
} from '../fleet/index.js';

export { normalizeIntent } from './intent.js';

/** Counts derived from the members. */
export interface Counts {
  readonly replicas: number;
  readonly ready: number;
  /** Ready for at least minReadySeconds. */
  readonly available: number;
  readonly updated: number;
  readonly restartPending: number;
  /** Non-Terminating members. */
  readonly live: number;
}

/**
 * Counts as the reference computes them (Terminating members only in `replicas`); a member is
 * available once Running for `minReadyMs` at `now`.
 */
export function countMembers(
  members: readonly VirtualMachine[],
  hash: string,
  now: Date = new Date(0),
  minReadyMs = 0,
): Counts {
  // One pass, no arrays: every reconcile counts every member.
  const t = now.getTime();
  let live = 0;
  let ready = 0;
  let available = 0;
  let updated = 0;
  let restartPending = 0;
  for (const m of members) {
    if (isTerminating(m)) continue;
    live++;
    if (isReady(m)) ready++;
    if ((availableAt(m, minReadyMs) ?? Infinity) <= t) available++;
    if (m.metadata.labels?.[keys.templateHash] === hash) updated++;
    if (m.metadata.annotations?.[keys.patchedTemplateHash] === hash && awaitingRestart(m))
      restartPending++;
  }
  return { replicas: members.length, ready, available, updated, restartPending, live };
}

/** What the plan decided that status reports beyond the replicas' own state. */
export interface Leaving {
  /** Surplus kept because only protected members could leave. */
  readonly protectedHeld: number;
  /** Leaving members draining. */
  readonly draining: number;
  /** The standby, when `spec.standby` is set: its members, the ready and the outdated among them. */
  readonly standby?: {
    readonly replicas: number;
    readonly ready: number;
    readonly outdated: number;
  };
  /** Claims: live members bound to a claim, claims waiting, idle members a claim could take now. */
  readonly claims?: { readonly claimed: number; readonly idle: number; readonly pending: number };
  /** Self-healing, when `spec.healing` is set: unhealthy members, back-off state, condition. */
  readonly healing?: {
    readonly unhealthy: number;
    readonly state?: HealingState;
    readonly condition?: Condition;
  };
}

const NOT_LEAVING: Leaving = { protectedHeld: 0, draining: 0 };

function progressing(desired: number, c: Counts, l: Leaving): Condition | undefined {
  if (l.protectedHeld > 0)
    return {
      type: 'Progressing',
      status: 'False',
      reason: 'ScaleDownBlockedByProtection',
      message: `Scale-down to ${desired} replicas waits: ${l.protectedHeld} surplus replicas are protected (annotation ${keys.protected}: "true")${(l.claims?.claimed ?? 0) > 0 ? ' or claimed (released when their VirtualMachineClaim is deleted or expires)' : ''}.`,
    };
  if (c.replicas === desired) return undefined;
  const draining = l.draining > 0 ? `, ${l.draining} draining` : '';
  return {
    type: 'Progressing',
    status: 'True',
    reason: 'ReplicasProgressing',
    message: `Converging to ${desired} replicas (currently ${c.replicas}${draining}).`,
  };
}

function synced(c: Counts, l: Leaving): Condition {
  const outdated = l.standby?.outdated ?? 0;
  if (c.updated >= c.live && outdated > 0)
    return {
      type: 'Synced',
      status: 'False',
      reason: 'RolloutInProgress',
      message: `${outdated} standby members are not on the current virtualMachineTemplate yet.`,
    };
  if (c.updated >= c.live)
    return { type: 'Synced', status: 'True', reason: 'PoolSynced', message: '' };
  if (c.restartPending > 0)
    return {
      type: 'Synced',
      status: 'False',
      reason: 'RestartPendingApproval',
      message: `${c.restartPending} of ${c.live} replicas await a restart to apply configuration.`,
    };
  return {
    type: 'Synced',
    status: 'False',
    reason: 'RolloutInProgress',
    message: `${c.updated} of ${c.live} replicas are on the current virtualMachineTemplate.`,
  };
}

/** `Paused=True` while `spec.paused` holds (absent otherwise, as `Progressing` is when converged). */
const PAUSED: Condition = {
  type: 'Paused',
  status: 'True',
  reason: 'Paused',
  message:
    'spec.paused is true: vmpool creates, deletes and updates nothing for this pool, and scaledownwith is refused; status is still reported. Set it to false to resume from the live state.',
};

function conditions(
  pool: VirtualMachinePool,
  c: Counts,
  l: Leaving,
  desired = pool.spec.replicas ?? 0,
): Condition[] {
  const out: Condition[] = [];
  out.push(
    c.available >= desired
      ? { type: 'Available', status: 'True', reason: 'AllReplicasReady', message: '' }
      : {
          type: 'Available',
          status: 'False',
          reason: 'InsufficientReadyReplicas',
          message: `Only ${c.available} of ${desired} replicas are ready${c.available < c.ready ? ` for minReadySeconds (${c.ready} Running)` : ''}.`,
        },
  );
  const moving = progressing(desired, c, l);
  // A paused pool converges to nothing: saying it does would contradict Paused=True beside it.
  if (moving !== undefined && pool.spec.paused === true)
    out.push({
      type: 'Progressing',
      status: 'False',
      reason: 'Paused',
      message: `Paused at ${c.replicas} of ${desired} replicas (spec.paused is true).`,
    });
  else if (moving !== undefined) out.push(moving);
  out.push(synced(c, l));
  if (l.healing?.condition !== undefined) out.push(l.healing.condition);
  if (pool.spec.paused === true) out.push(PAUSED);
  const generation = pool.metadata.generation;
  return generation === undefined
    ? out
    : out.map((x) => ({ ...x, observedGeneration: generation }));
}

/** Keeps a condition's lastTransitionTime unless its status flipped (SetStatusCondition semantics). */
function withTransitions(next: Condition[], prev: readonly Condition[], now: Date): Condition[] {
  return next.map((c) => {
    const old = prev.find((p) => p.type === c.type);
    const since = old?.status === c.status ? old.lastTransitionTime : undefined;
    return { ...c, lastTransitionTime: since ?? rfc3339(now) };
  });
}

/** What the status step reads: the replicas observed, and what the plan decided beside them. */
export interface StatusInput {
  readonly pool: VirtualMachinePool;
  /** The replicas (standby members are reported apart, in `leaving.standby`). */
  readonly members: readonly VirtualMachine[];
  readonly hash: string;
  readonly intent: Intent;
  readonly now: Date;
  readonly leaving?: Leaving;
  /** The replicas the pool runs when claims grow it (default `spec.replicas`). */
  readonly desired?: number;
}

/** The status a pool should have, given its members, its template revision and the intent. */
export function computeStatus(input: Readonly<StatusInput>): PoolStatus {
  const { pool, members, hash, intent, now, leaving = NOT_LEAVING } = input;
  const c = countMembers(members, hash, now, 1000 * (pool.spec.minReadySeconds ?? 0));
  const prev = pool.status ?? {};
  const status: PoolStatus = {
    ...prev,
    observedGeneration: pool.metadata.generation,
    replicas: c.replicas,
    readyReplicas: c.ready,
    availableReplicas: c.available,
    updatedReplicas: c.updated,
    restartPendingReplicas: c.restartPending,
    // Every count is reported, 0 where its feature is off: one rule for every column.
    protectedReplicas: members.filter((m) => isProtected(m) && !isTerminating(m)).length,
    heldReplicas: leaving.protectedHeld,
    claimedReplicas: leaving.claims?.claimed ?? 0,
    idleReplicas: leaving.claims?.idle ?? 0,
    pendingClaims: leaving.claims?.pending ?? 0,
    drainingReplicas: leaving.draining,
    standbyReplicas: leaving.standby?.replicas ?? 0,
    readyStandbyReplicas: leaving.standby?.ready ?? 0,
    unhealthyReplicas: leaving.healing?.unhealthy ?? 0,
    desiredTemplateHash: hash,
    selector: scaleSelectorOf(pool),
    conditions: withTransitions(
      conditions(pool, c, leaving, input.desired),
      prev.conditions ?? [],
      now,
    ),
  };
  setOptional(status, 'healing', leaving.healing?.state);
  const normalized = normalizeIntent(intent);
  if (normalized === undefined) delete status.intent;
  else status.intent = normalized;
  if (status.observedGeneration === undefined) delete status.observedGeneration;
  return status;
}

/** Sets a field the pool reports only when its feature is set up (and drops it otherwise). */
function setOptional<K extends keyof PoolStatus>(
  status: PoolStatus,
  key: K,
  value: PoolStatus[K] | undefined,
): void {
  if (value === undefined) delete status[key];
  else status[key] = value;
}

/**
 * The members as the plan's deletes leave them, for the status the fence writes: a member deleted
 * without a finalizer is gone once its delete lands (Background propagation), one with a finalizer is
 * Terminating. Each delete carries the resourceVersion the plan read, so one that lands finds the
 * member as read, finalizers included; one that does not (409) makes the pass re-read and write the
 * status again. So the pass after the deletes finds the status already right and writes nothing.
 */
export function membersAfterDeletes(
  members: readonly VirtualMachine[],
  actions: readonly Action[],
  now: Date,
): VirtualMachine[] {
  const deletes = new Map<string, string>();
  for (const a of actions) if (a.kind === 'deleteVm') deletes.set(a.name, a.uid);
  if (deletes.size === 0) return [...members];
  const at = rfc3339(now);
  const out: VirtualMachine[] = [];
  for (const m of members) {
    if (deletes.get(m.metadata.name ?? '') !== m.metadata.uid) out.push(m);
    else if ((m.metadata.finalizers ?? []).length > 0)
      out.push({
        ...m,
        metadata: { ...m.metadata, deletionTimestamp: m.metadata.deletionTimestamp ?? at },
      });
  }
  return out;
}

/**
 * `stored` without the recorded deletes that are done (their member Terminating or gone, so no live
 * member has their uid): such an entry is inert (observe ignores it, and a uid never names a
 * newcomer), so it alone is no reason to write; the next write that happens anyway drops it.
 * `liveUids` may be a function: it is called only when the intent has a deletes list (a plan of a
 * quiet pool builds no set of every member's uid).
 */
export function withoutDoneDeletes(
  stored: PoolStatus | undefined,
  liveUids: ReadonlySet<string> | (() => ReadonlySet<string>),
): PoolStatus | undefined {
  const deletes = stored?.intent?.deletes;
  if (stored === undefined || deletes === undefined) return stored;
  const live = typeof liveUids === 'function' ? liveUids() : liveUids;
  const pending = deletes.filter((d) => live.has(d.uid));
  if (pending.length === deletes.length) return stored;
  const intent = normalizeIntent({ ...stored.intent, deletes: pending });
  const out: PoolStatus = { ...stored };
  if (intent === undefined) delete out.intent;
  else out.intent = intent;
  return out;
}

/** True when two statuses are the same document (so writing would change nothing). */
export function sameStatus(a: PoolStatus | undefined, b: PoolStatus | undefined): boolean {
  return canonicalJson(a ?? {}) === canonicalJson(b ?? {});
}
