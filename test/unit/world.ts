/**
 * A pure, in-memory stand-in for the API server, for plan-level property tests: applies a plan's
 * status write and actions the way the executor would (creates by name, deletes by uid, updates by
 * replacement), so a test can run reconcile after reconcile and look at every step.
 * @module
 */
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../../shared/api/index.js';
import type { Observed, Plan } from '../../shared/domain/index.js';
import { recordedTargets, withTargets } from '../../shared/domain/index.js';

/** The objects of one pool's namespace. */
export interface World {
  pool: VirtualMachinePool;
  vms: VirtualMachine[];
  disks: VirtualDisk[];
}

/** What a reconcile reads. */
export function observedOf(w: World): Observed {
  return { pool: w.pool, vms: w.vms, disks: w.disks };
}

const nameOf = (o: { metadata: { name?: string | undefined } }): string => o.metadata.name ?? '';

/** Applies a plan as the executor would, with `now` as the creation time of new objects. */
export function apply(w: World, p: Plan, now: Date): World {
  let { pool, vms, disks } = w;
  if (p.writeStatus || p.fenced) pool = { ...pool, status: p.status };
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  for (const a of p.actions) {
    switch (a.kind) {
      case 'createVm': {
        const name = nameOf(a.vm);
        if (vms.some((v) => nameOf(v) === name)) break;
        const meta = { ...a.vm.metadata, uid: `uid-${name}`, creationTimestamp: stamp };
        vms = [...vms, { ...a.vm, metadata: meta, status: { phase: 'Running' } }];
        break;
      }
      case 'updateVm':
        vms = vms.map((v) => (nameOf(v) === nameOf(a.vm) ? a.vm : v));
        break;
      case 'deleteVm':
        vms = vms.filter((v) => !(nameOf(v) === a.name && v.metadata.uid === a.uid));
        break;
      case 'createDisk':
        if (!disks.some((d) => nameOf(d) === nameOf(a.disk)))
          disks = [
            ...disks,
            { ...a.disk, metadata: { ...a.disk.metadata, uid: `uid-${nameOf(a.disk)}` } },
          ];
        break;
      case 'claimDisk':
      case 'updateDisk':
        disks = disks.map((d) => (nameOf(d) === nameOf(a.disk) ? a.disk : d));
        break;
      case 'deleteDisk':
        disks = disks.filter((d) => nameOf(d) !== a.name);
        break;
      case 'dropTargets':
        pool = withTargets(
          pool,
          recordedTargets(pool).filter((t) => !a.names.includes(t.name)),
        );
        break;
    }
  }
  return { pool, vms, disks };
}
