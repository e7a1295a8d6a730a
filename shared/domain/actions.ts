/**
 * The side effects a plan asks for, executed in order by the functions through shared/kube.
 * @module
 */
import type { Quantity, VirtualDisk, VirtualMachine } from '../api/index.js';
import { keys } from '../api/index.js';

/** Why a VM is updated. */
export type VmUpdateWhy =
  | 'rollout'
  | 'advance'
  | 'attach'
  | 'detach'
  /** A leaving member asked to drain (drain-requested annotation set). */
  | 'drainRequest'
  /** A member that stays after all: its drain annotations removed. */
  | 'drainCancel';
/** Why a disk is updated. */
export type DiskUpdateWhy = 'claim' | 'freeSince' | 'inUse' | 'grow';

/** One side effect. Creates are name-addressed; deletes carry preconditions; updates carry the rv read. */
export type Action =
  /** Take a free Retain disk for a member: clears free-since under the disk's resourceVersion, so a
   * concurrent GC delete (conditioned on the old one) fails. Must succeed before dependent creates. */
  | {
      readonly kind: 'claimDisk';
      readonly disk: VirtualDisk;
      readonly forVm: string;
      /** The template's size, when the claim also grows the disk to it. */
      readonly grownTo?: Quantity;
    }
  /** Create a disk; `ownerVm` names a VM created earlier in the same pass whose uid the owner needs. */
  | { readonly kind: 'createDisk'; readonly disk: VirtualDisk; readonly ownerVm?: string }
  | { readonly kind: 'createVm'; readonly vm: VirtualMachine }
  | {
      readonly kind: 'updateVm';
      readonly vm: VirtualMachine;
      readonly why: readonly VmUpdateWhy[];
      /** The pool's drain timeout, for the DrainRequested Event. */
      readonly drainTimeout?: string;
    }
  | {
      readonly kind: 'deleteVm';
      readonly name: string;
      readonly uid: string;
      readonly why: 'scaleDown' | 'target';
      /** How the member's drain ended, when it drained first. */
      readonly drain?: { readonly outcome: 'drained' | 'timedOut'; readonly timeout: string };
    }
  | {
      readonly kind: 'updateDisk';
      readonly disk: VirtualDisk;
      readonly why: readonly DiskUpdateWhy[];
    }
  | {
      readonly kind: 'deleteDisk';
      readonly name: string;
      readonly uid: string;
      readonly resourceVersion: string;
      readonly why: 'removedTemplate' | 'deletePolicy' | 'gc';
    }
  /** Drop carried-out scaledownwith targets from the pool (a main-resource write on a fresh read). */
  | { readonly kind: 'dropTargets'; readonly names: readonly string[] };

/** The action of one kind. */
export type ActionOf<K extends Action['kind']> = Extract<Action, { readonly kind: K }>;
export type ClaimDisk = ActionOf<'claimDisk'>;
export type CreateDisk = ActionOf<'createDisk'>;
export type CreateVm = ActionOf<'createVm'>;
export type UpdateVm = ActionOf<'updateVm'>;
export type DeleteVm = ActionOf<'deleteVm'>;
export type UpdateDisk = ActionOf<'updateDisk'>;
export type DeleteDisk = ActionOf<'deleteDisk'>;

/**
 * True for actions that must be fenced by the intent write: creates, deletes, and drain marks (a
 * reconcile that read the pool before another recorded a victim must not cancel that victim's drain).
 */
export function isFenced(a: Action): boolean {
  return (
    (a.kind === 'updateVm' && a.why.some((w) => w === 'drainRequest' || w === 'drainCancel')) ||
    a.kind === 'claimDisk' ||
    a.kind === 'createDisk' ||
    a.kind === 'createVm' ||
    a.kind === 'deleteVm' ||
    a.kind === 'deleteDisk'
  );
}

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
      if (ok && a.drain?.outcome === 'timedOut')
        return warning(
          'DrainTimedOut',
          `Deleted VirtualMachine "${a.name}": not drained within drainTimeout ${a.drain.timeout}.`,
          'Delete',
        );
      return ok
        ? normal(
            'SuccessfulDelete',
            `Deleted VirtualMachine "${a.name}"${a.drain === undefined ? '' : ' (drained)'}.`,
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
      return ok ? drainEvent(a) : undefined;
    case 'dropTargets':
      return undefined;
  }
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

function drainEvent(a: UpdateVm): ActionEvent | undefined {
  const name = a.vm.metadata.name ?? '';
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
