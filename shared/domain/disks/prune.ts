/**
 * Disks the pool no longer wants: those of a removed template are detached from live members and
 * deleted once nothing uses them; free pool-owned disks of a template now under Delete go. Only
 * disks the pool controls (its controller ownerReference, or a member's) are ever deleted: the
 * pool-uid label alone is anybody's to set.
 * @module
 */
import type { BlockDeviceRef, VirtualDisk } from '../../api/index.js';
import { controllerOf } from '../../api/index.js';
import type { DeleteDisk, View } from '../plan/index.js';
import { policyOf, poolOwned } from './disks.js';
import { nameOf } from '../fleet/index.js';

/** The pruning decisions: deletes, members' refs with removed-template disks detached, warnings. */
export interface Pruned {
  readonly deletes: DeleteDisk[];
  readonly refs: Map<string, BlockDeviceRef[]>;
  readonly warnings: string[];
}

/** Prunes given the refs planned so far and the disks bound in this plan (pure). */
/** What pruning reads of the view. */
export type PruneInput = Pick<View, 'pool' | 'members' | 'live' | 'poolDisks' | 'busy'>;

export function pruneDisks(
  view: PruneInput,
  planned: ReadonlyMap<string, BlockDeviceRef[]>,
  claimed: ReadonlySet<string>,
): Pruned {
  const refs = new Map(planned);
  const deletes: DeleteDisk[] = [];
  const warnings: string[] = [];
  const controls = controllers(view);
  for (const { disk: d, template: t } of view.poolDisks) {
    const name = nameOf(d);
    let remove: DeleteDisk['why'] | undefined;
    if (t === undefined) {
      let referenced = false;
      for (const m of view.live.values()) {
        const mine = refs.get(nameOf(m)) ?? m.spec.blockDeviceRefs ?? [];
        const i = mine.findIndex((r) => r.kind === 'VirtualDisk' && r.name === name);
        if (i < 0) continue;
        referenced = true;
        // The boot disk is never pulled from under a running replica.
        if (i === 0)
          warnings.push(
            `VirtualDisk "${name}" of a removed template is the boot disk of "${nameOf(m)}" and stays until that replica is recreated`,
          );
        else
          refs.set(
            nameOf(m),
            mine.filter((_, j) => j !== i),
          );
      }
      if (!referenced && !view.busy.has(name) && controls(d)) remove = 'removedTemplate';
    } else if (
      !view.busy.has(name) &&
      !claimed.has(name) &&
      policyOf(t) === 'Delete' &&
      poolOwned(view.pool, d)
    ) {
      remove = 'deletePolicy';
    }
    if (remove !== undefined)
      deletes.push({
        kind: 'deleteDisk',
        name,
        uid: d.metadata.uid ?? '',
        resourceVersion: d.metadata.resourceVersion ?? '',
        why: remove,
      });
  }
  return { deletes, refs, warnings };
}

/** Whether a disk's controller is the pool or one of its members (Terminating ones included). */
function controllers(view: PruneInput): (d: VirtualDisk) => boolean {
  // Built for the first disk of a removed template that nothing uses (rare), not for every plan.
  let uids: Set<string | undefined> | undefined;
  const known = (): Set<string | undefined> => {
    const out = new Set(view.members.map((m) => m.metadata.uid));
    out.add(view.pool.metadata.uid);
    out.delete(undefined);
    return out;
  };
  return (d) => (uids ??= known()).has(controllerOf(d.metadata)?.uid);
}
