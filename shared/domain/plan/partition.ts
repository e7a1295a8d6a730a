/**
 * The replicas and the warm standby, told apart after the recorded intent: a member whose promotion
 * is recorded is a replica already, one whose return to the standby is recorded is standby already.
 * Counting by intent, not only by label, is what keeps concurrent reconciles from filling the same
 * slot twice while a label flip is on its way.
 * @module
 */
import type { VirtualMachine } from '../../api/index.js';
import { isStandby, isTerminating, nameOf } from '../fleet/index.js';
import type { MemberRef, Replacement, View } from './observe.js';

/** What telling the standby apart reads of the view: the members, the pending work, the recorded flips. */
export type SplitInput = Pick<
  View,
  | 'members'
  | 'live'
  | 'pendingCreates'
  | 'standbyCreates'
  | 'pendingDeletes'
  | 'pendingReplacements'
  | 'liveTargets'
  | 'pendingPromotions'
  | 'pendingReturns'
>;

/** What {@link standbyTest} reads: the recorded promotions and returns. */
type StandbyTestInput = Pick<View, 'pendingPromotions' | 'pendingReturns'>;

/** A view split into the replicas and the standby. */
export interface Split<V = View> {
  /** The replicas' view: their members, pending creates, victims, replacements and targets; the
   * fields the split does not read pass through as they are. */
  readonly active: V;
  /** Standby members, Terminating ones included. */
  readonly standby: readonly VirtualMachine[];
  /** Live standby members. */
  readonly standbyLive: readonly VirtualMachine[];
  /** Pending creates of standby members. */
  readonly standbyCreates: readonly string[];
  /** Recorded removals of surplus standby members, still live. */
  readonly standbyDeletes: readonly MemberRef[];
  /** Recorded replacements of standby members, still live. */
  readonly standbyReplacements: readonly Replacement[];
}

/** The standby's side of a split, without the replicas' view. */
export type StandbySide = Omit<Split, 'active'>;

const keyOf = (name: string, uid: string | undefined): string => `${name}/${uid ?? ''}`;

/**
 * Tells whether a member belongs to the standby once the recorded promotions and returns are done
 * (one index of the recorded flips, then constant time per member).
 */
function standbyTest(view: StandbyTestInput): (m: VirtualMachine) => boolean {
  if (view.pendingPromotions.length === 0 && view.pendingReturns.length === 0) return isStandby;
  const promoted = new Set(view.pendingPromotions.map((r) => keyOf(r.name, r.uid)));
  const returned = new Set(view.pendingReturns.map((r) => keyOf(r.name, r.uid)));
  return (m) => {
    const k = keyOf(nameOf(m), m.metadata.uid);
    return isStandby(m) ? !promoted.has(k) : returned.has(k);
  };
}

/** Splits a view (pure; linear in the members and the recorded flips). */
export function splitStandby<V extends SplitInput>(view: Readonly<V>): Split<V> {
  const inStandby = standbyTest(view);
  const standbyNames = new Set<string>();
  for (const m of view.members) if (inStandby(m)) standbyNames.add(nameOf(m));
  const isActive = (n: string): boolean => !standbyNames.has(n);
  const pendingCreates = view.pendingCreates.filter((n) => !view.standbyCreates.has(n));
  // Without standby members every member is a replica: the view's own collections serve as they are.
  const active: V =
    standbyNames.size === 0
      ? { ...view, pendingCreates }
      : {
          ...view,
          members: view.members.filter((m) => isActive(nameOf(m))),
          live: new Map([...view.live].filter(([n]) => isActive(n))),
          pendingCreates,
          pendingDeletes: view.pendingDeletes.filter((r) => isActive(r.name)),
          pendingReplacements: view.pendingReplacements.filter((r) => isActive(r.name)),
          liveTargets: view.liveTargets.filter((r) => isActive(r.name)),
        };
  const standby =
    standbyNames.size === 0 ? [] : view.members.filter((m) => standbyNames.has(nameOf(m)));
  return {
    active,
    standby,
    standbyLive: standby.filter((m) => !isTerminating(m)),
    standbyCreates: view.pendingCreates.filter((n) => view.standbyCreates.has(n)),
    standbyDeletes: view.pendingDeletes.filter((r) => !isActive(r.name)),
    standbyReplacements: view.pendingReplacements.filter((r) => !isActive(r.name)),
  };
}
