/**
 * Claims, a plan step right after observe: which pending claims take which idle members (oldest
 * claim first, the member Ready longest first), which claimed members are released (their claim
 * deleted, expired or lost), what each claim's status should say, and the pool's effective target.
 * Every later step sees the members as this step leaves them: bound ones marked (so no victim path
 * takes them), members released with Delete already Terminating (so no other member leaves for them).
 *
 * Crash safety and concurrency come from the intent: a binding is recorded in `status.intent.claims`
 * by the fenced status write before the member is marked, so a reconcile that read the pool after it
 * finishes that binding instead of choosing another, and one that read it before loses the fence.
 * @module
 */
import type {
  ClaimBinding,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../../api/index.js';
import type { ClaimMark } from '../fleet/index.js';
import {
  claimOf,
  effectiveTarget,
  isClaimed,
  isIdleMember,
  isProtected,
  nameOf,
  runningLongestFirst,
  withClaimMarks,
  withoutClaimMarks,
} from '../fleet/index.js';
import { rfc3339 } from '../formats/index.js';
import type { BindClaim, ClaimStatusWrite, DeleteVm, ReleaseClaim } from './actions.js';
import { resourceVersionOf } from './actions.js';
import {
  boundStatus,
  byClaimAge,
  endedStatus,
  expiredMessage,
  lostMessage,
  pendingMessage,
  pendingStatus,
  statusWrite,
} from './claim-status.js';
import type { View } from './observe.js';

/** What the claims step reads. */
export interface ClaimsInput {
  readonly view: Pick<
    View,
    | 'pool'
    | 'hash'
    | 'members'
    | 'live'
    | 'pendingDeletes'
    | 'pendingReplacements'
    | 'liveTargets'
    | 'pendingReturns'
  >;
  /** Claims read in the pool's namespace; those of other pools are ignored. */
  readonly claims: readonly VirtualMachineClaim[];
  /** Uids of claims that do not parse: their members stay as they are, neither released nor rebound. */
  readonly unreadable: ReadonlySet<string>;
  readonly now: Date;
}

/** The claims decisions of one plan. */
export interface ClaimsPlan {
  /** The members as this step leaves them: bound ones marked, those released with Delete Terminating. */
  readonly members: readonly VirtualMachine[];
  readonly live: ReadonlyMap<string, VirtualMachine>;
  /** Members to mark, recorded bindings not realized first. */
  readonly binds: readonly BindClaim[];
  /** Members whose claim ended: marks removed (Recycle) or deleted (Delete). */
  readonly releases: readonly (ReleaseClaim | DeleteVm)[];
  /** Claim statuses that change (Bound, Pending with its reason, Expired, Lost). */
  readonly statuses: readonly ClaimStatusWrite[];
  /** `status.intent.claims`: the bindings this plan makes or finishes. */
  readonly intent: readonly ClaimBinding[];
  /** The replicas the pool runs (see {@link effectiveTarget}). */
  readonly target: number;
  /** Live members bound to a claim after this plan. */
  readonly claimed: number;
  /**
   * Claims vmpool still owes work after this plan: those waiting for a member, and those it ends
   * (Expired, Lost) until their status is written. Recorded by the fence as `pendingClaims`, it
   * keeps every reconcile reading the claims until that work is done, whatever event comes next: a
   * crash after a released member's delete leaves no member marked to say so.
   */
  readonly pending: number;
  /** Idle members no claim took. */
  readonly idle: readonly VirtualMachine[];
  /** The earliest expiry ahead (ms). */
  readonly recheckAt?: number;
}

const ended = (c: VirtualMachineClaim): boolean =>
  c.status?.phase === 'Expired' || c.status?.phase === 'Lost';

/** Decides the claims of a pool (pure; `now` judges readiness and expiry). */
export function decideClaims(input: Readonly<ClaimsInput>): ClaimsPlan {
  const { view, now, unreadable } = input;
  const { pool } = view;
  const paused = pool.spec.paused === true;
  const t = now.getTime();
  const mine = input.claims
    .filter((c) => c.spec.poolName === nameOf(pool) && c.metadata.deletionTimestamp === undefined)
    .filter((c) => (c.metadata.namespace ?? '') === (pool.metadata.namespace ?? ''))
    .sort(byClaimAge);
  const byUid = new Map(mine.map((c) => [c.metadata.uid ?? '', c]));
  // Members marked in this plan by name; the others are as observed (live is not copied per plan).
  const marked = new Map<string, VirtualMachine>();
  const nextOf = (m: VirtualMachine): VirtualMachine =>
    marked.size === 0 ? m : (marked.get(nameOf(m)) ?? m);
  const holder = new Map<string, VirtualMachine>();
  const gone = new Set<string>();
  const binds: BindClaim[] = [];
  const releases: (ReleaseClaim | DeleteVm)[] = [];
  const statuses: ClaimStatusWrite[] = [];
  const intent: ClaimBinding[] = [];
  const write = (c: VirtualMachineClaim, s: Parameters<typeof statusWrite>[1]): void => {
    const w = statusWrite(c, s);
    if (w !== undefined) statuses.push(w);
  };
  // A paused pool changes no member: releases and bindings wait for it to resume.
  const release = (m: VirtualMachine, mark: ClaimMark): void => {
    if (paused) return;
    const claim = { name: mark.name, uid: mark.uid };
    if (mark.onRelease === 'Recycle')
      releases.push({ kind: 'releaseClaim', vm: withoutClaimMarks(m), claim });
    else {
      const uid = m.metadata.uid ?? '';
      const rv = resourceVersionOf(m);
      releases.push({ kind: 'deleteVm', name: nameOf(m), uid, ...rv, why: 'released', claim });
      gone.add(nameOf(m));
    }
  };
  const bind = (c: VirtualMachineClaim, m: VirtualMachine): void => {
    const onRelease = c.spec.onRelease ?? pool.spec.claims?.onRelease ?? 'Delete';
    const mark: ClaimMark = { name: nameOf(c), uid: c.metadata.uid ?? '', onRelease };
    const withMarks = withClaimMarks(m, mark);
    intent.push({
      claim: mark.name,
      claimUid: mark.uid,
      vm: nameOf(m),
      vmUid: m.metadata.uid ?? '',
    });
    binds.push({ kind: 'bindClaim', vm: withMarks, claim: { name: mark.name, uid: mark.uid } });
    marked.set(nameOf(m), withMarks);
    holder.set(mark.uid, withMarks);
  };

  // Members carrying marks: kept for their claim, or released when it is gone or over. A second
  // member marked for one claim (never made by vmpool) only loses the marks: nothing is deleted.
  for (const m of view.live.values()) {
    const mark = claimOf(m);
    if (mark === undefined || unreadable.has(mark.uid)) continue;
    const claim = byUid.get(mark.uid);
    if (claim === undefined || ended(claim)) release(m, mark);
    else if (holder.has(mark.uid)) release(m, { ...mark, onRelease: 'Recycle' });
    else holder.set(mark.uid, m);
  }
  // Recorded bindings not realized yet are finished, unless the member or the claim changed since.
  const used = (name: string): boolean => {
    const m = marked.get(name) ?? view.live.get(name);
    return m !== undefined && claimOf(m) !== undefined;
  };
  if (!paused)
    for (const b of pool.status?.intent?.claims ?? []) {
      const m = view.live.get(b.vm);
      const c = byUid.get(b.claimUid);
      if (m?.metadata.uid !== b.vmUid || c === undefined || nameOf(c) !== b.claim) continue;
      if (ended(c) || holder.has(b.claimUid) || used(b.vm)) continue;
      bind(c, m);
    }

  const waiting: VirtualMachineClaim[] = [];
  let recheck = Infinity;
  for (const c of mine) {
    if (ended(c)) continue;
    const uid = c.metadata.uid ?? '';
    const m = holder.get(uid);
    const expiresAt = Date.parse(c.status?.expiresAt ?? '');
    const bound = c.status?.phase === 'Bound';
    if (m !== undefined && bound && expiresAt <= t) {
      holder.delete(uid);
      release(m, claimOf(m) as ClaimMark);
      write(c, endedStatus(c, 'Expired', expiredMessage(c), now));
    } else if (m !== undefined) {
      const s = boundStatus(c, m, pool, now);
      write(c, s);
      recheck = Math.min(recheck, Date.parse(s.expiresAt ?? '') || Infinity);
    } else if (bound) {
      const lost = !(expiresAt <= t);
      const message = lost ? lostMessage(c) : expiredMessage(c);
      write(c, endedStatus(c, lost ? 'Lost' : 'Expired', message, now));
    } else waiting.push(c);
  }

  const leaving = new Set(
    [
      ...view.pendingDeletes,
      ...view.pendingReplacements,
      ...view.liveTargets,
      ...view.pendingReturns,
    ].map((r) => r.name),
  );
  const minReadyMs = 1000 * (pool.spec.minReadySeconds ?? 0);
  const idleOnes: VirtualMachine[] = [];
  for (const seen of view.live.values()) {
    const m = nextOf(seen);
    if (!leaving.has(nameOf(m)) && isIdleMember(m, view.hash, now, minReadyMs)) idleOnes.push(m);
  }
  // Only a waiting claim takes members in this order; without one, sorting is n log n for nothing.
  const idle = waiting.length === 0 ? idleOnes : runningLongestFirst(idleOnes);
  let taken = 0;
  const unbound: VirtualMachineClaim[] = [];
  for (const c of waiting) {
    const m = paused ? undefined : idle[taken];
    if (m === undefined) {
      unbound.push(c);
      continue;
    }
    taken++;
    bind(c, m);
    const s = boundStatus(c, holder.get(c.metadata.uid ?? '') as VirtualMachine, pool, now);
    write(c, s);
    recheck = Math.min(recheck, Date.parse(s.expiresAt ?? '') || Infinity);
  }

  // One pass over the members that stay: the claimed, the protected idle, and (only when this plan
  // marked or released one) the members as they stay.
  const same = marked.size === 0 && gone.size === 0;
  const staying: VirtualMachine[] = [];
  let claimed = 0;
  let protectedIdle = 0;
  for (const seen of view.live.values()) {
    if (gone.size > 0 && gone.has(nameOf(seen))) continue;
    const m = nextOf(seen);
    if (!same) staying.push(m);
    if (isClaimed(m)) claimed++;
    else if (isProtected(m)) protectedIdle++;
  }
  const replicas = pool.spec.replicas ?? 0;
  const target = effectiveTarget(replicas, pool.spec.claims, { claimed, pending: unbound.length });
  // Members that could still become idle for a claim: the cap less the claimed and the protected.
  const cap =
    pool.spec.claims === undefined ? replicas : Math.max(replicas, pool.spec.claims.maxReplicas);
  const room = cap - claimed - protectedIdle;
  unbound.forEach((c, i) => {
    const reason = paused ? 'PoolPaused' : i < room ? 'NoIdleMember' : 'PoolAtMaximum';
    write(c, pendingStatus(c, reason, pendingMessage(reason, nameOf(pool), cap), now));
  });

  const at = rfc3339(now);
  return {
    members: same
      ? view.members
      : view.members.map((m) => {
          const n = nameOf(m);
          if (gone.has(n)) return { ...m, metadata: { ...m.metadata, deletionTimestamp: at } };
          return view.live.get(n) === m ? (marked.get(n) ?? m) : m;
        }),
    live: same ? view.live : new Map(staying.map((m) => [nameOf(m), m])),
    binds,
    releases,
    statuses,
    intent,
    target,
    claimed,
    pending:
      unbound.length + statuses.filter((s) => s.phase === 'Expired' || s.phase === 'Lost').length,
    idle: idle.slice(taken),
    ...(recheck === Infinity ? {} : { recheckAt: recheck }),
  };
}

/**
 * Whether a reconcile must read the pool's claims whatever started it. It may skip them only when the
 * pool's last status write says no claim waits (`pendingClaims` 0), no member is bound
 * (`claimedReplicas` 0) and no binding is recorded: then only a new claim could concern the pool, and
 * a new claim starts its own reconcile (its event), or the resync tick lists it. An absent count
 * (written by an older vmpool, or pruned by a served schema that lacks it) says nothing: read them.
 */
export function claimsMayNeed(pool: VirtualMachinePool): boolean {
  const s = pool.status;
  return s?.pendingClaims !== 0 || s.claimedReplicas !== 0 || (s.intent?.claims?.length ?? 0) > 0;
}
