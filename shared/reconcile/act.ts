/**
 * One action through the Kube funnel: name-addressed creates, preconditioned deletes, conditioned
 * updates. Expected failures are values ({@link Step}); the executor decides what they stop.
 * @module
 */
import type { VirtualMachinePool } from '../api/index.js';
import type { Action } from '../domain/index.js';
import { isMember, recordedTargets, resourceVersionOf, withTargets } from '../domain/index.js';
import type { Failure, Kube, Outcome } from '../kube/index.js';
import type { EventLog } from './event-log.js';

/** `stale`: a write conditioned on what the plan read was refused (409); `retry`: anything else transient. */
export type Step = 'done' | 'retry' | 'stale' | Failure | { readonly foreign: string };

function settle<T>(o: Outcome<T>, accept: readonly string[] = []): Step {
  if (o.ok || accept.includes(o.reason)) return 'done';
  if (o.reason === 'conflict') return 'stale';
  if (o.reason === 'transient' || o.reason === 'notFound') return 'retry';
  return o;
}

/**
 * The function a pass runs each action with. It remembers the uid of each VM it created: a new VM's
 * own disks are owned by that uid.
 */
export function actor(
  kube: Kube,
  pool: VirtualMachinePool,
  report: EventLog['report'],
): (a: Action) => Promise<Step> {
  const ns = pool.metadata.namespace ?? '';
  const created = new Map<string, string>();
  return async (a) => {
    switch (a.kind) {
      case 'claimDisk':
      case 'updateDisk': {
        const o = await kube.updateDisk(a.disk);
        if (o.ok) report(a, true);
        return settle(o);
      }
      case 'createDisk': {
        let disk = a.disk;
        if (a.ownerVm !== undefined) {
          const uid = created.get(a.ownerVm);
          // The VM was created by another reconcile: the next pass creates its disk with its uid.
          if (uid === undefined) return 'done';
          const refs = (disk.metadata.ownerReferences ?? []).map((r) => ({ ...r, uid }));
          disk = { ...disk, metadata: { ...disk.metadata, ownerReferences: refs } };
        }
        const o = await kube.createDisk(ns, disk);
        if (!o.ok && o.reason !== 'alreadyExists') report(a, false, o.message);
        return settle(o, ['alreadyExists']);
      }
      case 'createVm': {
        const name = a.vm.metadata.name ?? '';
        const o = await kube.createVm(ns, a.vm);
        if (o.ok || o.reason !== 'alreadyExists') report(a, o.ok, o.ok ? '' : o.message);
        if (!o.ok) return o.reason === 'alreadyExists' ? taken(kube, pool, name) : settle(o);
        created.set(name, o.value.metadata.uid ?? '');
        return 'done';
      }
      case 'updateVm': {
        const o = await kube.updateVm(a.vm);
        if (o.ok) report(a, true);
        return settle(o);
      }
      case 'deleteVm': {
        // A 409 is a member changed since the plan read it (protected, say) or replaced under its
        // name: not done, the pass re-plans from a fresh read (L7).
        const pre = { uid: a.uid, ...resourceVersionOf({ metadata: a }) };
        const o = await kube.deleteVm(ns, a.name, pre);
        if (o.ok || (o.reason !== 'notFound' && o.reason !== 'conflict'))
          report(a, o.ok, o.ok ? '' : o.message);
        return settle(o, ['notFound']);
      }
      case 'deleteDisk': {
        const pre = { uid: a.uid, resourceVersion: a.resourceVersion };
        const o = await kube.deleteDisk(ns, a.name, pre);
        if (o.ok) report(a, true);
        return settle(o, ['notFound']);
      }
      case 'dropTargets':
        return dropTargets(kube, pool, a.names);
      case 'bindClaim':
      case 'releaseClaim': {
        // A 409: the member changed since the plan read it (another reconcile bound it): re-plan.
        const o = await kube.updateVm(a.vm);
        if (o.ok) report(a, true);
        return settle(o);
      }
      case 'claimStatus': {
        const o = await kube.updateClaimStatus(a.claim);
        if (o.ok) report(a, true);
        // A claim deleted meanwhile needs no status: its member is released by the next pass.
        return settle(o, ['notFound']);
      }
    }
  };
}

/**
 * A create met AlreadyExists: our own earlier create (done), or a VM that is not a member holding
 * the name, which would otherwise stay a pending create forever and keep the pool one short.
 */
async function taken(kube: Kube, pool: VirtualMachinePool, name: string): Promise<Step> {
  const got = await kube.getVm(pool.metadata.namespace ?? '', name);
  if (!got.ok) return settle(got);
  return isMember(pool, got.value) ? 'done' : { foreign: name };
}

async function dropTargets(
  kube: Kube,
  pool: VirtualMachinePool,
  names: readonly string[],
): Promise<Step> {
  const fresh = await kube.getPool(pool.metadata.namespace ?? '', pool.metadata.name ?? '');
  if (!fresh.ok) return settle(fresh, ['notFound']);
  if (fresh.value.metadata.uid !== pool.metadata.uid) return 'done';
  const keep = recordedTargets(fresh.value).filter((t) => !names.includes(t.name));
  return settle(await kube.updatePool(withTargets(fresh.value, keep)));
}
