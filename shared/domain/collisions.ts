/**
 * Two staying members that reference one Retain disk (a race of the reference implementation, or a
 * restored backup): one keeps it, the others get another disk in the same slot.
 * @module
 */
import type { Binding, VirtualMachine } from '../api/index.js';
import { BLOCK_DEVICES_READY } from '../api/index.js';
import { slotsOf } from './disks.js';
import { conditionOf, nameOf } from './membership.js';
import type { View } from './observe.js';

/**
 * For each member that loses a shared disk, the disks it loses. The member whose block devices are
 * ready keeps the disk (it is the one using it), then the first by name.
 */
export function collisionLosers(
  view: View,
  staying: readonly VirtualMachine[],
  bindings: readonly Binding[],
): Map<string, Set<string>> {
  const holders = new Map<string, VirtualMachine[]>();
  for (const m of staying)
    for (const slot of slotsOf(view.pool, m, view.diskByName, bindings).values())
      if (!slot.placeholder) holders.set(slot.disk, [...(holders.get(slot.disk) ?? []), m]);
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
