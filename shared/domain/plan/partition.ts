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

/** A view split into the replicas and the standby. */
export interface Split {
  /** The replicas' view: their members, pending creates, victims, replacements and targets. */
  readonly active: View;
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

const keyOf = (name: string, uid: string | undefined): string => `${name}/${uid ?? ''}`;

/**
 * Tells whether a member belongs to the standby once the recorded promotions and returns are done
 * (one index of the recorded flips, then constant time per member).
 */
export function standbyTest(view: View): (m: VirtualMachine) => boolean {
  if (view.pendingPromotions.length === 0 && view.pendingReturns.length === 0) return isStandby;
  const promoted = new Set(view.pendingPromotions.map((r) => keyOf(r.name, r.uid)));
  const returned = new Set(view.pendingReturns.map((r) => keyOf(r.name, r.uid)));
  return (m) => {
    const k = keyOf(nameOf(m), m.metadata.uid);
    return isStandby(m) ? !promoted.has(k) : returned.has(k);
  };
}

/** Splits a view (pure; linear in the members and the recorded flips). */
export function splitStandby(view: View): Split {
  const inStandby = standbyTest(view);
  const standbyNames = new Set<string>();
  for (const m of view.members) if (inStandby(m)) standbyNames.add(nameOf(m));
  const isActive = (n: string): boolean => !standbyNames.has(n);
  const pendingCreates = view.pendingCreates.filter((n) => !view.standbyCreates.has(n));
  // Without standby members every member is a replica: the view's own collections serve as they are.
  const active: View =
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
