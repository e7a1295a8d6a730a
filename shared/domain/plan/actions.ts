/**
 * The side effects a plan asks for, executed in order by the functions through shared/kube (their
 * Events: events.ts).
 * @module
 */
import type {
  ClaimPhase,
  Quantity,
  VirtualDisk,
  VirtualMachine,
  VirtualMachineClaim,
} from '../../api/index.js';

/** A claim named with its uid (a same-named newer claim is another claim). */
export interface ClaimRef {
  readonly name: string;
  readonly uid: string;
}

/** Why a VM is updated. */
export type VmUpdateWhy =
  | 'rollout'
  | 'advance'
  | 'attach'
  | 'detach'
  /** A leaving member asked to drain (drain-requested annotation set). */
  | 'drainRequest'
  /** A member that stays after all: its drain annotations removed. */
  | 'drainCancel'
  /** A standby member promoted to a replica: standby label removed, template runPolicy restored. */
  | 'promote'
  /** A removed member returned to the standby: labelled, stopped when the standby is Stopped. */
  | 'toStandby'
  /** A standby member brought to the standby's state (runPolicy). */
  | 'standbyState';
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
      /**
       * The member's resourceVersion when the plan decided (L7): a member protected, drained or
       * otherwise changed since answers 409 and the pass re-plans instead of deleting it.
       */
      readonly resourceVersion?: string;
      /**
       * A scale-down, scaledownwith, a replacement (healing, maxMemberAge), a surplus standby, or the
       * release of a claim whose onRelease is Delete.
       */
      readonly why: 'scaleDown' | 'target' | 'unhealthy' | 'expired' | 'standby' | 'released';
      /** The claim released, for `why: 'released'`. */
      readonly claim?: ClaimRef;
      /** How the member's drain ended, when it drained first. */
      readonly drain?: { readonly outcome: 'drained' | 'timedOut'; readonly timeout: string };
      /** The pool's maxMemberAge, for an expired member's Event. */
      readonly maxAge?: string;
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
  /**
   * Mark an idle member as the claim's (annotations claimed-by, claim-uid, on-release and the
   * claimed label): a PUT of the member as read, so a member changed since (claimed by another
   * reconcile, protected, deleted) answers 409 and the pass re-plans. Recorded in the intent first.
   */
  | { readonly kind: 'bindClaim'; readonly vm: VirtualMachine; readonly claim: ClaimRef }
  /** Remove the claim marks of a member whose claim ended and asked for Recycle (a PUT as read). */
  | { readonly kind: 'releaseClaim'; readonly vm: VirtualMachine; readonly claim: ClaimRef }
  /** PUT of a claim's status subresource, conditioned on the claim's resourceVersion as read. */
  | {
      readonly kind: 'claimStatus';
      readonly claim: VirtualMachineClaim;
      /** The phase written (its Event: Claimed, ClaimExpired, ClaimLost; none for Pending). */
      readonly phase: ClaimPhase;
    }
  /** Drop carried-out scaledownwith targets from the pool (a main-resource write on a fresh read). */
  | { readonly kind: 'dropTargets'; readonly names: readonly string[] };

/** `{ resourceVersion }` of an object as read, for a write conditioned on it (none when unknown). */
export function resourceVersionOf(
  o: { metadata: { resourceVersion?: string | undefined } } | undefined,
): {
  resourceVersion?: string;
} {
  const rv = o?.metadata.resourceVersion;
  return rv === undefined ? {} : { resourceVersion: rv };
}

/** The action of one kind. */
export type ActionOf<K extends Action['kind']> = Extract<Action, { readonly kind: K }>;
export type ClaimDisk = ActionOf<'claimDisk'>;
export type CreateDisk = ActionOf<'createDisk'>;
export type CreateVm = ActionOf<'createVm'>;
export type UpdateVm = ActionOf<'updateVm'>;
export type DeleteVm = ActionOf<'deleteVm'>;
export type UpdateDisk = ActionOf<'updateDisk'>;
export type DeleteDisk = ActionOf<'deleteDisk'>;
export type BindClaim = ActionOf<'bindClaim'>;
export type ReleaseClaim = ActionOf<'releaseClaim'>;
export type ClaimStatusWrite = ActionOf<'claimStatus'>;

/**
 * True for actions that must be fenced by the intent write: creates, deletes, and drain marks (a
 * reconcile that read the pool before another recorded a victim must not cancel that victim's drain).
 */
export function isFenced(a: Action): boolean {
  return (
    (a.kind === 'updateVm' && a.why.some((w) => FENCED_UPDATES.has(w))) ||
    a.kind === 'claimDisk' ||
    a.kind === 'bindClaim' ||
    a.kind === 'releaseClaim' ||
    a.kind === 'createDisk' ||
    a.kind === 'createVm' ||
    a.kind === 'deleteVm' ||
    a.kind === 'deleteDisk'
  );
}

/**
 * Member updates that move a member between the replicas and the standby, or decide who leaves:
 * recorded in the intent first, like creates and deletes.
 */
const FENCED_UPDATES: ReadonlySet<VmUpdateWhy> = new Set([
  'drainRequest',
  'drainCancel',
  'promote',
  'toStandby',
]);

/**
 * True for actions later ones depend on, so a pass stops when one of them fails: a claim (the VM
 * would attach a disk it does not hold), a promotion (the standby refill created after it would
 * take the standby above standby.replicas while the promoted member still carries the label), and
 * a claim's binding (its claim status would say Bound to a member not marked).
 */
export function isGate(a: Action): boolean {
  return (
    a.kind === 'claimDisk' ||
    a.kind === 'bindClaim' ||
    (a.kind === 'updateVm' && a.why.includes('promote'))
  );
}
