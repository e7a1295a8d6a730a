/**
 * A plan step after the split: which names to create and which members leave, recorded intent
 * first. Protection wins over a recorded choice that has not been carried out: a protected policy
 * victim is chosen again among the others, a protected scaledownwith target waits.
 * @module
 */
import type { VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  byCancelOrder,
  drainTimeoutMs,
  isDraining,
  nameOf,
  decideScale,
  deletionCost,
  isKept,
} from '../fleet/index.js';
import type { Rand } from '../formats/index.js';
import type { MemberRef, View } from './observe.js';

/** A live member that leaves, and on whose account (a scale-down, scaledownwith, a replacement). */
export interface Departure {
  readonly vm: VirtualMachine;
  readonly uid: string;
  readonly why: 'scaleDown' | 'target' | 'unhealthy' | 'expired';
}

/** The count decision: creates and victims (recorded ones first), and who stays. */
export interface Count {
  /** Names to create: pending recorded creates the desire still asks for, then fresh ones. */
  readonly creates: readonly string[];
  /** Victims to record: pending recorded victims still leaving, then the policy's choice. */
  readonly victims: readonly MemberRef[];
  /** Live members that leave: victims, unprotected live scaledownwith targets, replacements. */
  readonly leaving: ReadonlySet<string>;
  /**
   * Live members that stay, in observed order (protected targets that wait included), then the
   * standby members promoted now.
   */
  readonly staying: readonly VirtualMachine[];
  /** The leaving members: victims, then targets, then recorded replacements. */
  readonly departures: readonly Departure[];
  /** Standby members promoted now to fill a shortfall (before any create). */
  readonly promotions: readonly MemberRef[];
  /** Recorded targets that are Terminating, gone, or taken back by a scale-up: dropped from the pool. */
  readonly dropTargets: readonly string[];
  /** Surplus replicas kept because only protected members could leave (`status.protectedReplicas`). */
  readonly protectedHeld: number;
  /** Warnings about members the ranking looked at (a malformed deletion cost). */
  readonly warnings: readonly string[];
}

/** The recorded leavers of a view, split by protection. */
export function recordedLeavers(view: Pick<View, 'live' | 'pendingDeletes' | 'liveTargets'>): {
  victims: MemberRef[];
  targets: MemberRef[];
  held: MemberRef[];
} {
  const guarded = (r: MemberRef): boolean => {
    const m = view.live.get(r.name);
    return m !== undefined && isKept(m);
  };
  return {
    victims: view.pendingDeletes.filter((r) => !guarded(r)),
    targets: view.liveTargets.filter((r) => !guarded(r)),
    held: view.liveTargets.filter(guarded),
  };
}

/** What the count reads of the replicas' view. */
export type CountView = Pick<
  View,
  | 'pool'
  | 'members'
  | 'live'
  | 'pendingCreates'
  | 'pendingDeletes'
  | 'pendingReplacements'
  | 'targets'
  | 'liveTargets'
  | 'taken'
  | 'burst'
  | 'bound'
>;

/** What the count step reads. */
export interface CountInput extends CountView {
  readonly rand: Rand;
  /** Standby members a shortfall may promote, best first. */
  readonly promotable?: readonly VirtualMachine[];
  /** The replicas to run when claims set them (the effective target); default `spec.replicas`. */
  readonly target?: number;
}

/**
 * Decides the count of the replicas' view (pure; `rand` names fresh members). A shortfall takes
 * drains back, then promotes `promotable` standby members in order, then creates.
 */
export function decideCount(input: Readonly<CountInput>): Count {
  const view = input;
  const { rand, promotable = [] } = input;
  const recorded = recordedLeavers(view);
  const leavingRefs = [...recorded.victims, ...recorded.targets];
  const timeout = drainTimeoutMs(view.pool);
  const drains = leavingRefs
    .map((r) => view.live.get(r.name))
    .filter((m): m is VirtualMachine => m !== undefined && (timeout !== undefined || isDraining(m)))
    .sort(byCancelOrder);
  const decision = decideScale(
    {
      pool: nameOf(view.pool),
      desired: input.target ?? view.pool.spec.replicas ?? 0,
      policy: view.pool.spec.scaleDownPolicy,
      members: view.members,
      pendingCreates: view.pendingCreates,
      // A member being replaced counts until it is gone, like a Terminating one: never surplus.
      leaving: new Set([...leavingRefs, ...view.pendingReplacements].map((r) => r.name)),
      held: recorded.held.length,
      cancellable: [...recorded.held.map((r) => r.name), ...new Set(drains.map(nameOf))],
      promotable: promotable.map(nameOf),
      taken: view.taken,
      burst: view.burst,
      bound: view.bound,
    },
    rand,
  );
  const back = new Set(decision.cancelled);
  const victims: MemberRef[] = [
    ...recorded.victims.filter((r) => !back.has(r.name)),
    ...decision.victims.map((v) => ({ name: nameOf(v.vm), uid: v.vm.metadata.uid ?? '' })),
  ];
  const victimNames = new Set(victims.map((v) => v.name));
  const targets = recorded.targets.filter((t) => !back.has(t.name) && !victimNames.has(t.name));
  const { leaving, departures } = departuresOf(view, victims, targets);
  const promoted = new Set(decision.promoted);
  const promotions = promotable.filter((m) => promoted.has(nameOf(m)));
  const liveTargets = new Set(view.liveTargets);
  const held = recorded.held.filter((t) => !back.has(t.name)).length;
  const dropped = new Set(decision.dropped);
  return {
    creates: [...view.pendingCreates.filter((n) => !dropped.has(n)), ...decision.creates],
    victims,
    leaving,
    staying: [...[...view.live.values()].filter((m) => !leaving.has(nameOf(m))), ...promotions],
    departures,
    promotions: promotions.map((m) => ({ name: nameOf(m), uid: m.metadata.uid ?? '' })),
    dropTargets: view.targets
      .filter((t) => !liveTargets.has(t) || back.has(t.name))
      .map((t) => t.name),
    protectedHeld: held + decision.blocked,
    warnings:
      decision.victims.length === 0
        ? []
        : costWarnings(view, new Set(leavingRefs.map((r) => r.name))),
  };
}

/** Who leaves and on whose account: victims, then targets, then recorded replacements, each once. */
function departuresOf(
  view: CountView,
  victims: readonly MemberRef[],
  targets: readonly MemberRef[],
): { leaving: Set<string>; departures: Departure[] } {
  const leaving = new Set([...victims, ...targets].map((r) => r.name));
  const replaced = view.pendingReplacements.filter((r) => !leaving.has(r.name));
  for (const r of replaced) leaving.add(r.name);
  return {
    leaving,
    departures: [
      ...victims.map((v): Departure => ({ ...departing(view, v), why: 'scaleDown' })),
      ...targets.map((t): Departure => ({ ...departing(view, t), why: 'target' })),
      ...replaced.map((r): Departure => ({
        ...departing(view, r),
        why: r.reason === 'Unhealthy' ? 'unhealthy' : 'expired',
      })),
    ],
  };
}

function departing(view: Pick<View, 'live'>, r: MemberRef): { vm: VirtualMachine; uid: string } {
  // Leavers are live by construction (recorded ones are filtered by uid, chosen ones are members).
  return { vm: view.live.get(r.name) as VirtualMachine, uid: r.uid };
}

/**
 * Malformed deletion costs among the members a ranking looked at. Reported only when it just chose
 * victims (a pass that writes the intent anyway), so a quiescent pool with a bad annotation still
 * makes zero writes (L5) and the warning comes once per scale-down, not once per reconcile.
 */
function costWarnings(view: Pick<View, 'live'>, leaving: ReadonlySet<string>): string[] {
  return [...view.live.values()].flatMap((m) => {
    const bad = deletionCost(m).malformed;
    return bad === undefined || leaving.has(nameOf(m)) || isKept(m)
      ? []
      : [
          `VirtualMachine ${nameOf(m)}: deletion cost "${bad}" is not an int32; counted as 0 (annotation ${keys.deletionCost})`,
        ];
  });
}
