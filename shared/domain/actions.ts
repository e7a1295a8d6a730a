/**
 * The side effects a plan asks for, executed in order by the functions through shared/kube.
 * @module
 */
import type { VirtualDisk, VirtualMachine } from '../api/index.js';

/** Why a VM is updated. */
export type VmUpdateWhy = 'rollout' | 'advance' | 'attach' | 'detach';
/** Why a disk is updated. */
export type DiskUpdateWhy = 'claim' | 'freeSince' | 'inUse' | 'grow';

/** One side effect. Creates are name-addressed; deletes carry preconditions; updates carry the rv read. */
export type Action =
  /** Take a free Retain disk for a member: clears free-since under the disk's resourceVersion, so a
   * concurrent GC delete (conditioned on the old one) fails. Must succeed before dependent creates. */
  | { readonly kind: 'claimDisk'; readonly disk: VirtualDisk; readonly forVm: string }
  /** Create a disk; `ownerVm` names a VM created earlier in the same pass whose uid the owner needs. */
  | { readonly kind: 'createDisk'; readonly disk: VirtualDisk; readonly ownerVm?: string }
  | { readonly kind: 'createVm'; readonly vm: VirtualMachine }
  | { readonly kind: 'updateVm'; readonly vm: VirtualMachine; readonly why: readonly VmUpdateWhy[] }
  | {
      readonly kind: 'deleteVm';
      readonly name: string;
      readonly uid: string;
      readonly why: 'scaleDown' | 'target';
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

/** True for actions that must be fenced by the intent write (creates and deletes). */
export function isFenced(a: Action): boolean {
  return (
    a.kind === 'claimDisk' ||
    a.kind === 'createDisk' ||
    a.kind === 'createVm' ||
    a.kind === 'deleteVm' ||
    a.kind === 'deleteDisk'
  );
}

/** The events.k8s.io Event recorded for an action's outcome, in the reference's words. */
export function eventFor(
  a: Action,
  ok: boolean,
  error = '',
): { type: 'Normal' | 'Warning'; reason: string; note: string; action: string } | undefined {
  switch (a.kind) {
    case 'createVm':
      return ok
        ? {
            type: 'Normal',
            reason: 'SuccessfulCreate',
            note: `Created VirtualMachine "${a.vm.metadata.name ?? ''}".`,
            action: 'Create',
          }
        : {
            type: 'Warning',
            reason: 'FailedCreate',
            note: `Failed to create a VirtualMachine from the template: ${error}`,
            action: 'Create',
          };
    case 'deleteVm':
      return ok
        ? {
            type: 'Normal',
            reason: 'SuccessfulDelete',
            note: `Deleted VirtualMachine "${a.name}".`,
            action: 'Delete',
          }
        : {
            type: 'Warning',
            reason: 'FailedDelete',
            note: `Failed to delete VirtualMachine "${a.name}": ${error}`,
            action: 'Delete',
          };
    case 'deleteDisk':
      return ok
        ? {
            type: 'Normal',
            reason: 'DiskDeleted',
            note: `Deleted VirtualDisk "${a.name}" (${a.why}).`,
            action: 'Delete',
          }
        : undefined;
    case 'claimDisk':
    case 'createDisk':
    case 'updateVm':
    case 'updateDisk':
    case 'dropTargets':
      return undefined;
  }
}
