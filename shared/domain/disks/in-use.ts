/**
 * When a disk is in use (L3): while any VM references it, a pool member or not, Terminating or not,
 * or while the platform reports it attached. Such a disk is never bound to another member, stamped
 * free, pruned or collected. The pool's own members are read with every reconcile; VMs outside the
 * pool (a detached member, a VM a disk was hot-plugged into) only when a decision depends on them
 * ({@link freesDisks}), so a pool that frees, binds and deletes no disk pays nothing for them.
 * @module
 */
import type { VirtualDisk, VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import type { Action } from '../plan/index.js';
import { diskRefs } from './disks.js';

/**
 * True when the platform reports the disk attached to some VM (`status.attachedToVirtualMachines`
 * non-empty): it lists a VM from the moment it references the disk until it is gone, so a VM the
 * reconcile did not read (one outside the pool) still shows here.
 */
export function attached(disk: VirtualDisk): boolean {
  return (disk.status?.attachedToVirtualMachines ?? []).length > 0;
}

/** Names of the VirtualDisks `vms` reference, Terminating VMs included (they still hold theirs). */
export function referencedBy(vms: Iterable<VirtualMachine>): Set<string> {
  const out = new Set<string>();
  for (const vm of vms) for (const d of diskRefs(vm)) out.add(d);
  return out;
}

/**
 * Of a VM, only what says which disks it holds ({@link referencedBy}) and which pool it says it is
 * of (its pool-uid label: an unparseable disk it controls holds that pool back): a pass that reads
 * every VM of a namespace keeps this much of each, not the whole object.
 */
export function diskHolder(vm: VirtualMachine): VirtualMachine {
  const { name, namespace, uid } = vm.metadata;
  const pool = vm.metadata.labels?.[keys.poolUid];
  const refs = (vm.spec.blockDeviceRefs ?? []).filter((r) => r.kind === 'VirtualDisk');
  return {
    metadata: {
      name,
      namespace,
      uid,
      ...(pool === undefined ? {} : { labels: { [keys.poolUid]: pool } }),
    },
    spec: { blockDeviceRefs: refs },
  };
}

/**
 * True when some action gives a free disk to a member, starts a disk's free time or deletes a disk:
 * the decisions a VM outside the pool could veto, so the reconcile reads the namespace's VMs and
 * plans again before carrying out such a plan.
 */
export function freesDisks(actions: readonly Action[]): boolean {
  return actions.some(
    (a) =>
      a.kind === 'claimDisk' ||
      a.kind === 'deleteDisk' ||
      (a.kind === 'updateDisk' && a.why.includes('freeSince')),
  );
}
