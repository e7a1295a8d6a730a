/**
 * A plan step after the count: which members are replaced under a fresh name, within the disruption
 * budget. Self-healing (`spec.healing.startupTimeout`) replaces members that never reach Running,
 * with an exponential back-off recorded in the pool, and none while more than `maxUnhealthy` are
 * unhealthy at once (a circuit breaker, as the node lifecycle controller stops evicting from a zone
 * mostly down); lifetime (`spec.maxMemberAge`) replaces the oldest members. Protected and leaving
 * members are never replaced; members stopped on purpose are never unhealthy.
 * @module
 */
import type { HealingState, VirtualMachine, Condition } from '../../api/index.js';
import {
  disruptionLoad,
  disruptionOf,
  HEALING_MAX_UNHEALTHY,
  maxUnavailableOf,
  maxUnhealthyOf,
  sizeOf,
  healingCondition,
  ageOf,
  tryingSince,
  unhealthyAt,
  isTerminating,
  nameOf,
  isProtected,
  isKept,
} from '../fleet/index.js';
import type { Departure } from './count.js';
import { parseDuration } from '../formats/index.js';
import type { ActionEvent } from './events.js';
import type { View } from './observe.js';
import { rfc3339 } from '../formats/index.js';

/** The replacement decisions of one plan. */
export interface Replace {
  /** Members replaced now (recorded in the intent with a reason, then deleted or drained). */
  readonly victims: readonly Departure[];
  /** `ReplicaUnhealthy` for each member healed now. */
  readonly events: readonly ActionEvent[];
  /** Live members judged unhealthy (`status.unhealthyReplicas`). */
  readonly unhealthy: number;
  /** The back-off state to record (`status.healing`). */
  readonly healing?: HealingState;
  /** `Healing`, when self-healing is set up. */
  readonly condition?: Condition;
  /** Budget left for disrupting serving members (a rollout's restarts). */
  readonly budgetLeft: number;
  /** When a member turns unhealthy or expires, or the back-off ends: reconcile then. */
  readonly recheckAt?: number;
}

/** What the replace step reads: the replicas' and standby's members, and beside them: */
export interface ReplaceInput extends Pick<
  View,
  'pool' | 'hash' | 'members' | 'pendingReplacements'
> {
  /** Members that stay after the count (replicas and standby). */
  readonly staying: readonly VirtualMachine[];
  /** Creates recorded or decided, not yet seen: new members out of service. */
  readonly creates: number;
  readonly now: Date;
}

const HOUR = 3_600_000;

/** The wait before replacement round `rounds + 1`: startupTimeout, doubled each round, at most an hour. */
export function backoffMs(rounds: number, timeoutMs: number): number {
  return Math.min(timeoutMs * 2 ** Math.max(0, rounds - 1), Math.max(timeoutMs, HOUR));
}

/** Decides replacements (pure; `now` judges startup timeouts, ages and the back-off). */
export function decideReplace(input: Readonly<ReplaceInput>): Replace {
  const view = input;
  const { pool, now } = input;
  const t = now.getTime();
  const timeoutMs = parseDuration(pool.spec.healing?.startupTimeout ?? '');
  const sick = (m: VirtualMachine): boolean =>
    timeoutMs !== undefined && (unhealthyAt(m, timeoutMs) ?? Infinity) <= t;
  const recorded = new Set(view.pendingReplacements.map((r) => r.name));
  // A member recorded for replacement is in progress whatever its state.
  const others =
    recorded.size === 0 ? view.members : view.members.filter((m) => !recorded.has(nameOf(m)));
  const load = disruptionLoad(others, view.hash, sick);
  let busy = load.busy + recorded.size + input.creates;
  let broken = load.broken;
  const limit = maxUnavailableOf(pool);
  const prev = pool.status?.healing;
  const open = input.staying.filter((m) => !isKept(m));
  // Without a startupTimeout (unset or unparsable) nothing is sick: no member is walked for it.
  const ill = timeoutMs === undefined ? [] : open.filter(sick).sort(byTrying);
  const unhealthy = timeoutMs === undefined ? 0 : view.members.filter(sick).length;
  const tolerated = maxUnhealthyOf(pool);
  // The breaker: so many failing at once is the platform's or the template's fault, not theirs.
  const tripped = timeoutMs !== undefined && unhealthy > tolerated;
  const nextRound =
    prev === undefined || timeoutMs === undefined ? t : nextRoundAt(prev, timeoutMs);
  const heal = !tripped && t >= nextRound ? ill.slice(0, Math.max(0, limit - busy)) : [];
  busy += heal.length;
  broken -= heal.length;
  const expired = expiring(view, open, heal, t);
  const expire = expired.due.slice(0, Math.max(0, limit - busy - broken));
  busy += expire.length;

  const healing = nextHealing(prev, heal.length, healthy(view, input, open), now);
  const starting = timeoutMs === undefined ? [] : open.map((m) => unhealthyAt(m, timeoutMs));
  // A tripped breaker waits for members to change (each change is an event), not for a deadline.
  const blocked = ill.length > heal.length && !tripped ? nextRound : undefined;
  const due = [...starting, expired.next, blocked].filter(
    (x): x is number => x !== undefined && x > t,
  );
  const timeout = pool.spec.healing?.startupTimeout ?? '';
  const facts = {
    timeout,
    unhealthy,
    kept:
      timeoutMs === undefined ? 0 : input.staying.filter((m) => isProtected(m) && sick(m)).length,
    ...(tripped
      ? {
          tripped: {
            size: sizeOf(pool),
            tolerated,
            setting: String(
              pool.spec.healing?.maxUnhealthy ?? `${HEALING_MAX_UNHEALTHY} (default)`,
            ),
          },
        }
      : {}),
    ...(healing === undefined || timeoutMs === undefined
      ? {}
      : { state: healing, next: nextRoundAt(healing, timeoutMs) }),
  };
  return {
    victims: [
      ...heal.map((vm): Departure => ({ vm, uid: vm.metadata.uid ?? '', why: 'unhealthy' })),
      ...expire.map((vm): Departure => ({ vm, uid: vm.metadata.uid ?? '', why: 'expired' })),
    ],
    events: heal.map((vm) => unhealthyEvent(vm, timeout)),
    unhealthy,
    budgetLeft: Math.max(0, limit - busy - broken),
    ...(healing === undefined ? {} : { healing }),
    ...(timeoutMs === undefined ? {} : { condition: healingCondition(facts) }),
    ...(due.length === 0 ? {} : { recheckAt: Math.min(...due) }),
  };
}

/** When the round after `state` may start (ms). */
function nextRoundAt(state: HealingState, timeoutMs: number): number {
  return Date.parse(state.lastRoundTime) + backoffMs(state.rounds, timeoutMs);
}

/**
 * Healthy only once replacements are done: nothing to create, nobody recorded to go or going, no
 * unprotected member still trying to start. Then the back-off is forgotten.
 */
function healthy(
  view: ReplaceInput,
  input: ReplaceInput,
  open: readonly VirtualMachine[],
): boolean {
  return (
    input.creates === 0 &&
    view.pendingReplacements.length === 0 &&
    !view.members.some(isTerminating) &&
    !open.some((m) => tryingSince(m) !== undefined)
  );
}

/** The back-off state after a plan that healed `healed` members. */
function nextHealing(
  prev: HealingState | undefined,
  healed: number,
  fine: boolean,
  now: Date,
): HealingState | undefined {
  if (healed > 0) return { rounds: (prev?.rounds ?? 0) + 1, lastRoundTime: rfc3339(now) };
  return fine ? undefined : prev;
}

const byTrying = (a: VirtualMachine, b: VirtualMachine): number =>
  (tryingSince(a) ?? 0) - (tryingSince(b) ?? 0) || (nameOf(a) < nameOf(b) ? -1 : 1);

/** Members past `maxMemberAge` that serve (or rest on purpose), oldest first; when the next expires. */
function expiring(
  view: ReplaceInput,
  open: readonly VirtualMachine[],
  healed: readonly VirtualMachine[],
  t: number,
): { due: VirtualMachine[]; next?: number } {
  const maxMs = parseDuration(view.pool.spec.maxMemberAge ?? '');
  if (maxMs === undefined || maxMs <= 0) return { due: [] };
  const now = new Date(t);
  const skip = new Set(healed);
  const due: VirtualMachine[] = [];
  let next: number | undefined;
  for (const m of open) {
    if (skip.has(m) || disruptionOf(m, view.hash) !== 'none') continue;
    const left = maxMs - ageOf(m, now);
    if (left <= 0) due.push(m);
    else next = Math.min(next ?? Infinity, t + left);
  }
  due.sort((a, b) => ageOf(b, now) - ageOf(a, now) || (nameOf(a) < nameOf(b) ? -1 : 1));
  return next === undefined ? { due } : { due, next };
}

function unhealthyEvent(vm: VirtualMachine, timeout: string): ActionEvent {
  const phase = vm.status?.phase ?? 'no phase yet';
  const since = tryingSince(vm);
  const when = since === undefined ? '' : ` since ${rfc3339(new Date(since))}`;
  return {
    type: 'Warning',
    reason: 'ReplicaUnhealthy',
    note: `VirtualMachine "${nameOf(vm)}" is not Running within startupTimeout ${timeout} (${phase}${when}): replacing it under a fresh name.`,
    action: 'Replace',
  };
}
