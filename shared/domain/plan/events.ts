/**
 * The Events recorded about actions, in the reference's words where it has them.
 * @module
 */
import { keys } from '../../api/index.js';
import type {
  Action,
  ClaimRef,
  ClaimStatusWrite,
  DeleteDisk,
  DeleteVm,
  UpdateVm,
} from './actions.js';
import type { VirtualDisk } from '../../api/index.js';

/** An events.k8s.io Event about an action. */
export interface ActionEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly note: string;
  readonly action: string;
}

const normal = (reason: string, note: string, action: string): ActionEvent => ({
  type: 'Normal',
  reason,
  note,
  action,
});
const warning = (reason: string, note: string, action: string): ActionEvent => ({
  type: 'Warning',
  reason,
  note,
  action,
});

/** The Event recorded for an action's outcome, in the reference's words. */
export function eventFor(a: Action, ok: boolean, error = ''): ActionEvent | undefined {
  switch (a.kind) {
    case 'createVm': {
      const name = a.vm.metadata.name ?? '';
      return ok
        ? normal('SuccessfulCreate', `Created VirtualMachine "${name}".`, 'Create')
        : warning(
            'FailedCreate',
            `Failed to create a VirtualMachine from the template: ${error}`,
            'Create',
          );
    }
    case 'deleteVm':
      if (ok && a.why === 'released')
        return normal(
          'Released',
          `Deleted VirtualMachine "${a.name}", released by VirtualMachineClaim "${a.claim?.name ?? ''}" (onRelease Delete): the pool refills its idle members.`,
          'Release',
        );
      if (ok && a.why === 'unhealthy')
        return normal(
          'ReplicaReplaced',
          `Deleted unhealthy VirtualMachine "${a.name}": a replacement is created under a fresh name once it is gone.`,
          'Replace',
        );
      if (ok && a.why === 'expired')
        return normal(
          'ReplicaExpired',
          `Deleted VirtualMachine "${a.name}"${drained(a)}: older than maxMemberAge ${a.maxAge ?? ''}; a replacement is created under a fresh name.`,
          'Replace',
        );
      if (ok && a.drain?.outcome === 'timedOut')
        return warning(
          'DrainTimedOut',
          `Deleted VirtualMachine "${a.name}": not drained within drainTimeout ${a.drain.timeout}.`,
          'Delete',
        );
      return ok
        ? normal(
            'SuccessfulDelete',
            `Deleted ${a.why === 'standby' ? 'standby ' : ''}VirtualMachine "${a.name}"${drained(a)}.`,
            'Delete',
          )
        : warning(
            'FailedDelete',
            `Failed to delete VirtualMachine "${a.name}": ${error}`,
            'Delete',
          );
    case 'deleteDisk':
      return ok
        ? normal('DiskCollected', `Deleted VirtualDisk "${a.name}": ${COLLECTED[a.why]}.`, 'Delete')
        : undefined;
    case 'createDisk':
      return ok
        ? undefined
        : warning(
            'FailedCreate',
            `Failed to create VirtualDisk "${a.disk.metadata.name ?? ''}": ${error}`,
            'Create',
          );
    case 'updateDisk':
      return ok && a.why.includes('grow') ? grown(a.disk) : undefined;
    case 'claimDisk':
      return ok && a.grownTo !== undefined ? grown(a.disk) : undefined;
    case 'updateVm':
      return ok ? memberEvent(a) : undefined;
    case 'releaseClaim':
      return ok
        ? normal(
            'Released',
            `Released VirtualMachine "${a.vm.metadata.name ?? ''}" of VirtualMachineClaim "${a.claim.name}" (onRelease Recycle): it is an ordinary replica again.`,
            'Release',
          )
        : undefined;
    case 'claimStatus':
      return ok ? claimEvent(a) : undefined;
    case 'bindClaim':
    case 'dropTargets':
      return undefined;
  }
}

/**
 * The claim an action's Event is also about (recorded on the claim as well as on the pool): the
 * claim bound, released or whose status is written.
 */
export function claimOfAction(a: Action): ClaimRef | undefined {
  if (a.kind === 'bindClaim' || a.kind === 'releaseClaim' || a.kind === 'deleteVm') return a.claim;
  if (a.kind === 'claimStatus')
    return { name: a.claim.metadata.name ?? '', uid: a.claim.metadata.uid ?? '' };
  return undefined;
}

/** Claimed, ClaimExpired or ClaimLost, as the phase written says. */
function claimEvent(a: ClaimStatusWrite): ActionEvent | undefined {
  const claim = a.claim.metadata.name ?? '';
  const vm = a.claim.status?.virtualMachineName ?? '';
  switch (a.phase) {
    case 'Bound':
      return normal(
        'Claimed',
        `VirtualMachineClaim "${claim}" took VirtualMachine "${vm}"${holderOf(a)}.`,
        'Claim',
      );
    case 'Expired':
      return normal(
        'ClaimExpired',
        `VirtualMachineClaim "${claim}" expired at ${a.claim.status?.expiresAt ?? ''}: VirtualMachine "${vm}" is released.`,
        'Release',
      );
    case 'Lost':
      return warning(
        'ClaimLost',
        `VirtualMachineClaim "${claim}" lost VirtualMachine "${vm}": it is gone or no longer bound to the claim.`,
        'Claim',
      );
    case 'Pending':
      return undefined;
  }
}

function holderOf(a: ClaimStatusWrite): string {
  const h = a.claim.spec.holder;
  return h === undefined || h === '' ? '' : ` for ${h}`;
}

/** Why a disk was collected, in the Event's words. */
const COLLECTED: Readonly<Record<DeleteDisk['why'], string>> = {
  gc: 'free for longer than its template ttl, beyond the keep most recently freed',
  removedTemplate: 'its disk template was removed from the pool and nothing references it',
  deletePolicy: 'its disk template is now reclaimed with onScaleDown: Delete and it is free',
};

function grown(disk: VirtualDisk): ActionEvent {
  const size = String(disk.spec.persistentVolumeClaim?.size ?? '');
  const note = `Grew VirtualDisk "${disk.metadata.name ?? ''}" to ${size}, the size of its template.`;
  return normal('DiskSizeGrown', note, 'Update');
}

function drained(a: DeleteVm): string {
  if (a.drain === undefined) return '';
  return a.drain.outcome === 'drained'
    ? ' (drained)'
    : ` (drain timed out after ${a.drain.timeout})`;
}

function memberEvent(a: UpdateVm): ActionEvent | undefined {
  const name = a.vm.metadata.name ?? '';
  if (a.why.includes('promote'))
    return normal(
      'StandbyPromoted',
      `Promoted standby VirtualMachine "${name}" to a replica (runPolicy ${a.vm.spec.runPolicy ?? 'as the platform defaults'}).`,
      'Promote',
    );
  if (a.why.includes('toStandby'))
    return normal(
      'ReturnedToStandby',
      `Returned VirtualMachine "${name}" to the standby instead of deleting it (standby.reuseOnScaleDown).`,
      'ReturnToStandby',
    );
  if (a.why.includes('drainRequest'))
    return normal(
      'DrainRequested',
      `Asked VirtualMachine "${name}" to drain before removal: it is deleted once annotated ${keys.drained}: "true", or after drainTimeout ${a.drainTimeout ?? ''}.`,
      'Drain',
    );
  if (a.why.includes('drainCancel'))
    return normal(
      'DrainCancelled',
      `Cancelled the drain of VirtualMachine "${name}": it stays in the pool.`,
      'Drain',
    );
  return undefined;
}
