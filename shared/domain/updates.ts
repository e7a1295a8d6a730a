/**
 * The fourth step of a plan: writes to objects that stay. Members get their new disk references and
 * the template rollout in one update; the pool's disks get free-since stamped or cleared and their
 * size grown to the template's.
 * @module
 */
import type { BlockDeviceRef, DiskTemplate, VirtualDisk, VirtualMachine } from '../api/index.js';
import { keys } from '../api/index.js';
import type { DiskUpdateWhy, UpdateDisk, UpdateVm, VmUpdateWhy } from './actions.js';
import { growthOf, policyOf, poolOwned, stampFree, withSize } from './disks.js';
import { cancelDrain, isDraining } from './drain.js';
import { nameOf } from './membership.js';
import type { View } from './observe.js';
import { advance, patchToTemplate, rolloutStep } from './rollout.js';
import { rfc3339 } from './status.js';

/**
 * One update per staying member that needs one: new refs, rollout patch or revision advance, drain
 * marks removed. Protected members are updated like any other: protection is about removal only.
 */
export function memberUpdates(
  view: View,
  staying: readonly VirtualMachine[],
  refs: ReadonlyMap<string, BlockDeviceRef[]>,
): UpdateVm[] {
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
    if (step === 'patch') {
      why.push('rollout');
      next = patchToTemplate(next, view.pool.spec.virtualMachineTemplate, view.hash);
    } else if (step === 'advance' && newRefs === undefined) {
      why.push('advance');
      next = advance(next, view.hash);
    }
    // A member that stays keeps no drain mark: a scale-up took it back, protection came first, or a
    // crash left the mark after its victim record was dropped.
    if (isDraining(m)) {
      why.push('drainCancel');
      next = cancelDrain(next);
    }
    if (why.length > 0) out.push({ kind: 'updateVm', vm: next, why });
  }
  return out;
}

/**
 * One update per pool disk that needs one, except disks claimed in this plan (their claim carries
 * the same edits): free-since follows whether the disk is in use, sizes only grow.
 */
export function diskUpdates(
  view: View,
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
  view: View,
  disk: VirtualDisk,
  template: DiskTemplate,
  inUse: ReadonlySet<string>,
  now: Date,
): UpdateDisk | undefined {
  const why: DiskUpdateWhy[] = [];
  let next: VirtualDisk = disk;
  if (policyOf(template) === 'Retain' && poolOwned(view.pool, disk)) {
    const used = inUse.has(nameOf(disk));
    const stamped = disk.metadata.annotations?.[keys.freeSince] !== undefined;
    if (used && stamped) {
      why.push('inUse');
      next = stampFree(next, undefined);
    } else if (!used && !stamped) {
      why.push('freeSince');
      next = stampFree(next, rfc3339(now));
    }
  }
  const size = growthOf(template, disk);
  if (size !== undefined) {
    why.push('grow');
    next = withSize(next, size);
  }
  return why.length === 0 ? undefined : { kind: 'updateDisk', disk: next, why };
}
