/**
 * Warm standby (`spec.standby`): a plan step after the replicas' count. The standby is kept at
 * `standby.replicas` members, Terminating and leaving ones included, so it never exceeds that number
 * at any instant: a shortfall takes back members a scale-down removes (`reuseOnScaleDown`), then
 * creates; a surplus removes the least ready. Promotions were decided by the count (they fill the
 * replicas first); here they only leave the standby.
 * @module
 */
import type { VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import type { DeleteVm } from './actions.js';
import { resourceVersionOf } from './actions.js';
import type { Departure } from './count.js';
import { isTerminating, nameOf, freshNames, isKept, latestUnbound } from '../fleet/index.js';
import type { TakenNames } from '../fleet/index.js';
import type { Rand } from '../formats/index.js';
import type { MemberRef, View } from './observe.js';
import type { Split } from './partition.js';

/** What the standby step looks at beside the split. */
export interface StandbyInput {
  readonly pool: VirtualMachinePool;
  readonly hash: string;
  /** The standby's side, and the replicas' live members (removals that may return). */
  readonly split: Split<Pick<View, 'live'>>;
  /** Standby members promoted now. */
  readonly promoted: ReadonlySet<string>;
  /** Standby members replaced now (healing, lifetime). */
  readonly replaced: readonly Departure[];
  /** This plan's removals of replicas, which may return to the standby instead. */
  readonly removals: readonly DeleteVm[];
  /** Most fresh creates to record (what the replicas left of the burst). */
  readonly burst: number;
  /** Pending creates with a disk recorded for them: never dropped (see the scale step). */
  readonly bound: ReadonlySet<string>;
  /** Names never to use for a new member. */
  readonly taken: TakenNames;
  /** Names fresh members. */
  readonly rand: Rand;
}

/** The standby decisions of one plan. */
export interface StandbyPlan {
  /** Standby creates: pending recorded ones, then fresh names. */
  readonly creates: readonly string[];
  /** Returns to record: pending ones, then removals taken back now. */
  readonly returns: readonly MemberRef[];
  /** Surplus standby members to record as victims (recorded ones still live, then new). */
  readonly victims: readonly MemberRef[];
  /** Deletes of surplus and replaced standby members (nothing to drain on a standby member). */
  readonly deletes: readonly DeleteVm[];
  /** Standby members after this plan, returned ones included. */
  readonly staying: readonly VirtualMachine[];
  /** Removals of replicas taken back into the standby now (no longer deleted). */
  readonly returned: ReadonlySet<string>;
}

/** The phase a ready standby member is in. */
export function standbyPhase(pool: VirtualMachinePool): 'Stopped' | 'Running' {
  return pool.spec.standby?.state === 'Running' ? 'Running' : 'Stopped';
}

const refOf = (vm: VirtualMachine): MemberRef => ({ name: nameOf(vm), uid: vm.metadata.uid ?? '' });

/** Decides the standby (pure; `rand` names fresh standby members). */
export function decideStandby(input: Readonly<StandbyInput>): StandbyPlan {
  const { pool, split, promoted, rand } = input;
  const want = pool.spec.standby?.replicas ?? 0;
  const recorded = [...split.standbyDeletes, ...split.standbyReplacements];
  const out = new Set([...recorded, ...input.replaced.map((d) => refOf(d.vm))].map((r) => r.name));
  const live = split.standbyLive.filter((m) => !promoted.has(nameOf(m)));
  const count = split.standby.length - (split.standbyLive.length - live.length);
  const terminating = split.standby.filter(isTerminating).length;
  const over =
    count +
    split.standbyCreates.length -
    want -
    terminating -
    live.filter((m) => out.has(nameOf(m))).length;
  // Pending creates the standby no longer wants are dropped before any member is chosen to go.
  const drop = new Set(latestUnbound(split.standbyCreates, input.bound, over));
  const pending = split.standbyCreates.filter((n) => !drop.has(n));
  const total = count + pending.length;
  const surplus = over - drop.size;
  const keep = live.filter((m) => !out.has(nameOf(m)));
  const chosen = surplus > 0 ? leastReady(keep, input.hash, standbyPhase(pool), surplus) : [];
  const room = Math.max(0, want - total);
  const reuse = pool.spec.standby?.reuseOnScaleDown === true;
  const back = reuse
    ? input.removals.filter((r) => r.why === 'scaleDown' || r.why === 'target').slice(0, room)
    : [];
  const fresh = Math.min(room - back.length, input.burst - pending.length);
  const gone = new Set(chosen);
  const read = new Map(split.standbyLive.map((m) => [nameOf(m), m]));
  const removal = (r: MemberRef, why: DeleteVm['why']): DeleteVm => ({
    kind: 'deleteVm',
    ...r,
    ...resourceVersionOf(read.get(r.name)),
    why,
  });
  const victims = [...split.standbyDeletes, ...chosen.map(refOf)];
  return {
    creates: [...pending, ...(fresh > 0 ? freshNames(nameOf(pool), fresh, input.taken, rand) : [])],
    returns: [
      ...live.filter((m) => m.metadata.labels?.[keys.standby] !== 'true').map(refOf),
      ...back.map((r) => ({ name: r.name, uid: r.uid })),
    ],
    victims,
    deletes: [
      ...victims.map((r) => removal(r, 'standby')),
      ...split.standbyReplacements.map((r) =>
        removal(r, r.reason === 'Unhealthy' ? 'unhealthy' : 'expired'),
      ),
      ...input.replaced.map((d) => removal(refOf(d.vm), d.why)),
    ].map((d) => (d.why === 'expired' ? { ...d, maxAge: pool.spec.maxMemberAge ?? '' } : d)),
    staying: [
      ...keep.filter((m) => !gone.has(m)),
      ...back.flatMap((r) => split.active.live.get(r.name) ?? []),
    ],
    returned: new Set(back.map((r) => r.name)),
  };
}

/**
 * The `n` standby members to remove from a surplus: never a protected (or claimed) one; on an old revision
 * first, then not in the phase the standby keeps, then the newest, then by name.
 */
function leastReady(
  members: readonly VirtualMachine[],
  hash: string,
  phase: string,
  n: number,
): VirtualMachine[] {
  const key = (m: VirtualMachine): [number, number, string, string] => [
    m.metadata.labels?.[keys.templateHash] === hash ? 1 : 0,
    m.status?.phase === phase ? 1 : 0,
    m.metadata.creationTimestamp ?? '',
    nameOf(m),
  ];
  return members
    .filter((m) => !isKept(m))
    .map((m) => ({ m, k: key(m) }))
    .sort(
      (a, b) =>
        a.k[0] - b.k[0] ||
        a.k[1] - b.k[1] ||
        (a.k[2] === b.k[2] ? 0 : a.k[2] < b.k[2] ? 1 : -1) ||
        (a.k[3] < b.k[3] ? -1 : 1),
    )
    .slice(0, n)
    .map((x) => x.m);
}
