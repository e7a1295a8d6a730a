/**
 * The second step of a plan: which names to create and which members leave, recorded intent first.
 * @module
 */
import type { VirtualMachine } from '../api/index.js';
import type { DeleteVm } from './actions.js';
import { nameOf } from './membership.js';
import type { Rand } from './names.js';
import type { MemberRef, View } from './observe.js';
import { decideScale } from './scale.js';

/** The count decision: creates and victims (recorded ones first), and who stays. */
export interface Count {
  /** Names to create: pending recorded creates, then fresh ones. */
  readonly creates: readonly string[];
  /** Victims to record: pending recorded victims, then the policy's choice. */
  readonly victims: readonly MemberRef[];
  /** Live members that leave: victims and live scaledownwith targets. */
  readonly leaving: ReadonlySet<string>;
  /** Live members that stay, in observed order. */
  readonly staying: readonly VirtualMachine[];
  /** The member deletions, victims before targets. */
  readonly deletes: readonly DeleteVm[];
  /** Recorded targets that are Terminating or gone: dropped from the pool. */
  readonly dropTargets: readonly string[];
}

/** Decides the count (pure; `rand` names fresh members). */
export function decideCount(view: View, rand: Rand): Count {
  const recordedLeaving = new Set([...view.pendingDeletes, ...view.liveTargets].map((r) => r.name));
  const decision = decideScale(
    {
      pool: nameOf(view.pool),
      desired: view.pool.spec.replicas ?? 0,
      policy: view.pool.spec.scaleDownPolicy,
      members: view.members,
      pendingCreates: view.pendingCreates,
      leaving: recordedLeaving,
      taken: view.taken,
    },
    rand,
  );
  const victims: MemberRef[] = [
    ...view.pendingDeletes,
    ...decision.victims.map((v) => ({ name: nameOf(v), uid: v.metadata.uid ?? '' })),
  ];
  const leaving = new Set([...recordedLeaving, ...victims.map((v) => v.name)]);
  const victimNames = new Set(victims.map((v) => v.name));
  const deletes: DeleteVm[] = [
    ...victims.map((v): DeleteVm => ({
      kind: 'deleteVm',
      name: v.name,
      uid: v.uid,
      why: 'scaleDown',
    })),
    ...view.liveTargets
      .filter((t) => !victimNames.has(t.name))
      .map((t): DeleteVm => ({ kind: 'deleteVm', name: t.name, uid: t.uid, why: 'target' })),
  ];
  const liveTargets = new Set(view.liveTargets);
  return {
    creates: [...view.pendingCreates, ...decision.creates],
    victims,
    leaving,
    staying: [...view.live.values()].filter((m) => !leaving.has(nameOf(m))),
    deletes,
    dropTargets: view.targets.filter((t) => !liveTargets.has(t)).map((t) => t.name),
  };
}
