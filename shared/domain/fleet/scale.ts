/**
 * How many replicas to create and which members leave, counting recorded intent so that concurrent
 * and repeated reconciles agree.
 * @module
 */
import type { ScaleDownPolicy, VirtualMachine } from '../../api/index.js';
import { isTerminating, nameOf } from './membership.js';
import type { Rand } from '../formats/index.js';
import { ALPHABET, VM_SUFFIX, vmName } from '../formats/index.js';
import type { Ranked } from './victims.js';
import { isKept } from './claimed.js';
import { rankVictims } from './victims.js';

/**
 * The most creates one pass records (the ReplicaSet controller's `burstReplicas`). Intent never
 * holds more than this many pending creates, so a scale taken back, a pause or a deletion stops
 * creation within one burst: the next burst is recorded only by a pass that read the current desire
 * and renewed the fence (its status write conditioned on the pool's resourceVersion).
 */
export const CREATE_BURST = 500;

/** What the scale step sees. */
export interface ScaleInput {
  readonly pool: string;
  readonly desired: number;
  readonly policy: ScaleDownPolicy;
  readonly members: readonly VirtualMachine[];
  /** Recorded creates not yet observed as members. */
  readonly pendingCreates: readonly string[];
  /** Live members leaving on purpose: recorded victims and scaledownwith targets, none protected. */
  readonly leaving: ReadonlySet<string>;
  /** Recorded targets kept by protection: already taken off `desired`, so not surplus again. */
  readonly held?: number;
  /** Names a shortfall takes back before any create, in that order (held targets, then drains). */
  readonly cancellable?: readonly string[];
  /** Standby members a shortfall promotes before it creates, in that order. */
  readonly promotable?: readonly string[];
  /** Names that may not be used for a new VM (every VM name seen, pending ones included). */
  readonly taken: TakenNames;
  /** Most pending creates to record (default {@link CREATE_BURST}). */
  readonly burst?: number;
  /**
   * Pending creates with a disk recorded for them: never dropped, since another reconcile may be
   * creating the VM right now, and a dropped binding would free its disk for a second member (L3).
   */
  readonly bound?: ReadonlySet<string>;
}

/** The scale decision. */
export interface ScaleDecision {
  /** Fresh names to create (at most {@link CREATE_BURST} with the pending ones). */
  readonly creates: string[];
  /** Recorded creates not made yet that the desire no longer asks for: dropped from the intent. */
  readonly dropped: string[];
  readonly victims: Ranked[];
  /** Leaving members (or held targets) taken back instead of creating. */
  readonly cancelled: string[];
  /** Standby members promoted instead of creating. */
  readonly promoted: string[];
  /** Surplus no unprotected member is left to satisfy: kept. */
  readonly blocked: number;
}

/**
 * The members a scale-down may rank: live and staying (`staying`), and among them those neither
 * protected nor claimed.
 */
export function scaleDownCandidates(
  members: readonly VirtualMachine[],
  leaving: ReadonlySet<string>,
): { staying: VirtualMachine[]; candidates: VirtualMachine[] } {
  const staying = members.filter((m) => !isTerminating(m) && !leaving.has(nameOf(m)));
  return { staying, candidates: staying.filter((m) => !isKept(m)) };
}

const none = { creates: [], dropped: [], victims: [], cancelled: [], promoted: [], blocked: 0 };

/**
 * Members plus pending creates count toward replicas, Terminating and draining members included
 * (they still hold resources), so no member is ever replaced while it leaves. A shortfall of staying
 * members first takes leaving ones back (a drain is cancelled, not answered with a new VM); a surplus
 * beyond those already leaving is ranked ({@link rankVictims}); `Explicit` never picks victims.
 */
export function decideScale(input: ScaleInput, rand: Rand): ScaleDecision {
  const terminating = input.members.filter(isTerminating).length;
  const leaving = input.members.filter((m) => !isTerminating(m) && input.leaving.has(nameOf(m)));
  const over =
    input.members.length +
    input.pendingCreates.length -
    input.desired -
    terminating -
    leaving.length;
  const burst = input.burst ?? CREATE_BURST;
  const dropped = droppedCreates(input, Math.max(0, over - (input.held ?? 0)), burst);
  const pending = input.pendingCreates.length - dropped.length;
  const count = input.members.length + pending;
  const surplus = over - dropped.length - (input.held ?? 0);
  if (surplus < 0) {
    const cancelled = (input.cancellable ?? []).slice(0, -surplus);
    const room = Math.max(0, input.desired - count);
    const promoted = (input.promotable ?? []).slice(0, room);
    const fresh = Math.min(room - promoted.length, burst - pending);
    const creates = fresh > 0 ? freshNames(input.pool, fresh, input.taken, rand) : [];
    return { ...none, creates, dropped, cancelled, promoted };
  }
  if (surplus === 0 || input.policy === 'Explicit') return { ...none, dropped };
  const { staying, candidates } = scaleDownCandidates(input.members, input.leaving);
  const victims = rankVictims(candidates, input.policy, staying, surplus);
  return { ...none, dropped, victims, blocked: surplus - victims.length };
}

/**
 * The pending creates to drop: `surplus` of them that the desire no longer asks for, then any beyond
 * one burst (an intent recorded before bursts existed); the latest first, never a bound one. A
 * create not made yet is the cheapest surplus: unrecorded, it never happens.
 */
function droppedCreates(input: ScaleInput, surplus: number, burst: number): string[] {
  const bound = input.bound ?? new Set<string>();
  const free =
    input.pendingCreates.length - input.pendingCreates.filter((n) => bound.has(n)).length;
  const forDesire = Math.min(surplus, free);
  const forBurst = Math.max(0, input.pendingCreates.length - forDesire - burst);
  return latestUnbound(input.pendingCreates, bound, forDesire + forBurst);
}

/**
 * The latest `n` pending creates (fewer when there are not that many) no disk was recorded for:
 * those a surplus drops, never one another reconcile may be making with a disk of its own (L3).
 */
export function latestUnbound(
  pending: readonly string[],
  bound: ReadonlySet<string>,
  n: number,
): string[] {
  const free = pending.filter((name) => !bound.has(name));
  const k = Math.min(Math.max(0, n), free.length);
  return k === 0 ? [] : free.slice(-k);
}

/**
 * Names no new member may take. Only ever asked about one name, so the indexes a plan has already
 * built answer it together, instead of a copy of every VM name in the namespace.
 */
export interface TakenNames {
  has(name: string): boolean;
}

/** `taken` and `more` together; `taken` itself when `more` is empty. */
export function takenWith(taken: TakenNames, more: readonly string[]): TakenNames {
  if (more.length === 0) return taken;
  const added = new Set(more);
  return { has: (name) => added.has(name) || taken.has(name) };
}

/** Steps a name's suffix through the alphabet until it is free: randomness that repeats still ends. */
function nextFree(name: string, taken: TakenNames): string {
  for (let pos = name.length - 1; pos > name.length - 1 - VM_SUFFIX; pos--) {
    for (let i = 0; i < ALPHABET.length; i++) {
      const candidate = name.slice(0, pos) + ALPHABET.charAt(i) + name.slice(pos + 1);
      if (!taken.has(candidate)) return candidate;
    }
  }
  return name;
}

/** `n` fresh member names of a pool, none of them in `used` nor repeated. */
export function freshNames(pool: string, n: number, used: TakenNames, rand: Rand): string[] {
  const chosen = new Set<string>();
  const taken: TakenNames = { has: (name) => chosen.has(name) || used.has(name) };
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let name = vmName(pool, rand);
    // 27^5 names: a collision is rare, but a repeat would collapse two creates into one.
    for (let tries = 0; taken.has(name) && tries < 32; tries++) name = vmName(pool, rand);
    if (taken.has(name)) name = nextFree(name, taken);
    chosen.add(name);
    out.push(name);
  }
  return out;
}
