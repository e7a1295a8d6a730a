/**
 * A plan step after binding: writes to objects that stay. Members get their new disk references and
 * the template rollout in one update; the pool's disks get free-since stamped or cleared and their
 * size grown to the template's.
 * @module
 */
import type { BlockDeviceRef, DiskTemplate, VirtualDisk, VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import type { DiskUpdateWhy, UpdateDisk, UpdateVm, VmUpdateWhy } from './actions.js';
import { growthOf, policyOf, poolOwned, stampFree, withSize } from '../disks/index.js';
import {
  cancelDrain,
  isDraining,
  isClaimed,
  isStandby,
  isUp,
  asReplica,
  asStandby,
  standbyShaped,
  nameOf,
  advance,
  patchToTemplate,
  rolloutStep,
} from '../fleet/index.js';
import type { View } from './observe.js';
import { rfc3339 } from '../formats/index.js';

/** What member updates need beside the view: who ends the plan in the standby, the budget. */
export interface Roles {
  /** Members that are standby after this plan (returned ones included). */
  readonly standby: ReadonlySet<string>;
  /** Rollout patches of serving members allowed now (rollout.maxUnavailable left). */
  readonly budget: number;
}

const NO_ROLES: Roles = { standby: new Set(), budget: Infinity };

/** What member updates read of the view. */
type MemberView = Pick<View, 'pool' | 'hash'>;

/** What the member updates step reads. */
export interface UpdatesInput extends MemberView {
  /** Members that stay after this plan. */
  readonly staying: readonly VirtualMachine[];
  /** New block device references of staying members (from binding). */
  readonly refs: ReadonlyMap<string, BlockDeviceRef[]>;
  readonly roles?: Roles;
}

/**
 * One update per staying member that needs one: new refs, rollout patch or revision advance, its
 * role (promoted, returned to or kept in the standby's shape), drain marks removed. Protected members
 * are updated like any other: protection is about removal only.
 */
export function memberUpdates(input: Readonly<UpdatesInput>): UpdateVm[] {
  const view = input;
  const { staying, refs, roles = NO_ROLES } = input;
  const patchable = rolloutBatch(view, staying, roles);
  const out: UpdateVm[] = [];
  for (const m of staying) {
    const why: VmUpdateWhy[] = [];
    let next = m;
    const newRefs = refs.get(nameOf(m));
    if (newRefs !== undefined) {
      why.push(newRefs.length >= (m.spec.blockDeviceRefs ?? []).length ? 'attach' : 'detach');
      next = { ...next, spec: { ...next.spec, blockDeviceRefs: newRefs } };
    }
    const step = rolloutStep(m, view.hash);
    if (step === 'patch' && patchable.has(m)) {
      why.push('rollout');
      next = patchToTemplate(next, view.pool.spec.virtualMachineTemplate, view.hash);
    } else if (step === 'advance' && newRefs === undefined) {
      why.push('advance');
      next = advance(next, view.hash);
    }
    const role = roleChange(view, roles, m, next);
    if (role !== undefined) {
      why.push(role.why);
      next = role.vm;
    }
    // A member that stays keeps no drain mark: a scale-up took it back, protection came first, or a
    // crash left the mark after its victim record was dropped. One returned to the standby has
    // finished its drain: the marks go without a DrainCancelled.
    if (isDraining(m)) {
      if (!why.includes('toStandby')) why.push('drainCancel');
      next = cancelDrain(next);
    }
    if (why.length > 0) out.push({ kind: 'updateVm', vm: next, why });
  }
  return out;
}

/** A change of role: promoted to a replica, returned to the standby, or kept in its shape. */
function roleChange(
  view: MemberView,
  roles: Roles,
  m: VirtualMachine,
  next: VirtualMachine,
): { vm: VirtualMachine; why: VmUpdateWhy } | undefined {
  if (roles.standby.has(nameOf(m))) {
    if (standbyShaped(view.pool, next)) return undefined;
    return { vm: asStandby(view.pool, next), why: isStandby(m) ? 'standbyState' : 'toStandby' };
  }
  return isStandby(m) ? { vm: asReplica(view.pool, next), why: 'promote' } : undefined;
}

/**
 * The members whose rollout patch may go now. A patch of a member that serves may restart it, so
 * those take the budget, standby members first (they serve nobody yet), then by name, a stable order
 * concurrent reconciles agree on; a member out of service or stopped on purpose is patched freely.
 */
function rolloutBatch(
  view: MemberView,
  staying: readonly VirtualMachine[],
  roles: Roles,
): ReadonlySet<VirtualMachine> {
  // A claimed member is its holder's: the rollout reaches it once released (Recycle) or replaced.
  const due = staying.filter((m) => rolloutStep(m, view.hash) === 'patch' && !isClaimed(m));
  if (roles.budget === Infinity) return new Set(due);
  const costly = isUp;
  const rank = (m: VirtualMachine): string =>
    `${roles.standby.has(nameOf(m)) ? 0 : 1}/${nameOf(m)}`;
  const paid = due
    .filter(costly)
    .sort((a, b) => (rank(a) < rank(b) ? -1 : 1))
    .slice(0, roles.budget);
  return new Set([...due.filter((m) => !costly(m)), ...paid]);
}

/**
 * One update per pool disk that needs one, except disks claimed in this plan (their claim carries
 * the same edits): free-since follows whether the disk is in use, sizes only grow.
 */
export function diskUpdates(
  view: Pick<View, 'pool' | 'poolDisks'>,
  inUse: ReadonlySet<string>,
  claimedNow: ReadonlySet<string>,
  now: Date,
): UpdateDisk[] {
  const out: UpdateDisk[] = [];
  for (const { disk, template } of view.poolDisks) {
    if (template === undefined || claimedNow.has(nameOf(disk))) continue;
    const edit = diskEdit(view, disk, template, inUse, now);
    if (edit !== undefined) out.push(edit);
  }
  return out;
}

function diskEdit(
  view: Pick<View, 'pool'>,
  disk: VirtualDisk,
  template: DiskTemplate,
  inUse: ReadonlySet<string>,
  now: Date,
): UpdateDisk | undefined {
  // Most disks need nothing: the reasons' array is made for those that do.
  let why: DiskUpdateWhy[] | undefined;
  let next: VirtualDisk = disk;
  if (policyOf(template) === 'Retain' && poolOwned(view.pool, disk)) {
    const used = inUse.has(nameOf(disk));
    const stamped = disk.metadata.annotations?.[keys.freeSince] !== undefined;
    if (used && stamped) {
      why = ['inUse'];
      next = stampFree(next, undefined);
    } else if (!used && !stamped) {
      why = ['freeSince'];
      next = stampFree(next, rfc3339(now));
    }
  }
  const size = growthOf(template, disk);
  if (size !== undefined) {
    why = [...(why ?? []), 'grow'];
    next = withSize(next, size);
  }
  return why === undefined ? undefined : { kind: 'updateDisk', disk: next, why };
}
