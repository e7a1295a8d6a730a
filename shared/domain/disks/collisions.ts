/**
 * Two staying members that reference one Retain disk (a race of the reference implementation, or a
 * restored backup): one keeps it, the others get another disk in the same slot.
 * @module
 */
import type { VirtualMachine } from '../../api/index.js';
import { BLOCK_DEVICES_READY } from '../../api/index.js';
import type { Slots } from './disks.js';
import { conditionOf, nameOf } from '../fleet/index.js';

/**
 * For each member that loses a shared disk, the disks it loses. The member whose block devices are
 * ready keeps the disk (it is the one using it), then the first by name. `slots[i]` are the slots of
 * `staying[i]` (`slotsOf` in disks.ts); `shared` holds at least every disk two of them reference
 * (the view's `sharedRefs` holds every disk two live members do): only those can collide, so no
 * index of every disk is built per plan.
 */
export function collisionLosers(
  staying: readonly VirtualMachine[],
  slots: readonly Slots[],
  shared: ReadonlySet<string>,
): Map<string, Set<string>> {
  if (shared.size === 0) return new Map();
  // The first holder of each shared disk, and every holder of a disk held twice (the rare case).
  const first = new Map<string, VirtualMachine>();
  const holders = new Map<string, VirtualMachine[]>();
  staying.forEach((m, i) => {
    for (const slot of slots[i] ?? []) {
      if (slot.placeholder || !shared.has(slot.disk)) continue;
      const one = first.get(slot.disk);
      if (one === undefined) first.set(slot.disk, m);
      else holders.set(slot.disk, [...(holders.get(slot.disk) ?? [one]), m]);
    }
  });
  const losers = new Map<string, Set<string>>();
  const ready = (m: VirtualMachine): number =>
    conditionOf(m, BLOCK_DEVICES_READY)?.status === 'True' ? 0 : 1;
  for (const [disk, ms] of holders) {
    if (ms.length < 2) continue;
    const sorted = ms.toSorted((a, b) => ready(a) - ready(b) || (nameOf(a) < nameOf(b) ? -1 : 1));
    for (const m of sorted.slice(1))
      losers.set(nameOf(m), new Set([...(losers.get(nameOf(m)) ?? []), disk]));
  }
  return losers;
}
