/**
 * The contract of vmpool's single I/O funnel to the API server. Expected failures are values.
 * @module
 */
import type {
  Malformed,
  VirtualDisk,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../api/index.js';

/** Why a call failed, as a value the caller can branch on. */
export type FailureReason =
  'notFound' | 'conflict' | 'alreadyExists' | 'invalid' | 'forbidden' | 'transient';

/** A failed call: HTTP code, reason and the API server's message. */
export interface Failure {
  readonly ok: false;
  readonly reason: FailureReason;
  readonly code: number;
  readonly message: string;
}

/** The outcome of one API call. */
export type Outcome<T> = { readonly ok: true; readonly value: T } | Failure;

/**
 * The outcome of a list. Items are parsed one by one: one that its model refuses is left out of
 * `value` and named in `malformed` instead of failing the whole list (DESIGN L8: one bad object
 * harms only its own pool). The funnel always sets `malformed`; hand-made outcomes may omit it.
 */
export type Listed<T> =
  | {
      readonly ok: true;
      readonly value: T[];
      /** The items skipped, with their identity and first issue; absent or empty: none. */
      readonly malformed?: readonly Malformed[];
      /**
       * Set when only one page was asked for ({@link PageRequest}) and more remain: the token that
       * continues the list. Absent: the list is complete.
       */
      readonly next?: string;
    }
  | Failure;

/** One page of a list instead of all of it: the first page, or the one `continue` names. */
export interface PageRequest {
  /** The token of the previous page's `next`; absent for the first page. */
  readonly continue?: string;
  /** Items per page (default: the funnel's page size). */
  readonly limit?: number;
  /**
   * Read every page from there on in pages of `limit`, not only the one asked for: for a caller that
   * holds the whole list anyway, where a larger page only saves round trips.
   */
  readonly all?: boolean;
  /**
   * Called with the continue token of a page asked for alone, as soon as its body is read and before
   * its items are parsed: a caller reading page by page may ask for the next page meanwhile, so the
   * API server serves it while this one is parsed.
   */
  readonly ahead?: (next: string) => void;
  /**
   * Drop the items' `managedFields` before parsing (`withoutManagedFields`): for a caller that keeps
   * facts of what it lists and never writes an item back, parsing them is most of its CPU.
   */
  readonly lean?: boolean;
}

/** Preconditions for a delete: the object must still be this uid (and this resourceVersion). */
export interface Preconditions {
  readonly uid: string;
  readonly resourceVersion?: string;
}

/** Of a pool, what an Event about it names: a whole pool, or the facts a GC pass keeps of one. */
export interface EventPool {
  readonly apiVersion?: string | undefined;
  readonly kind?: string | undefined;
  readonly metadata: Pick<
    VirtualMachinePool['metadata'],
    'name' | 'namespace' | 'uid' | 'resourceVersion'
  >;
}

/** An events.k8s.io/v1 Event about a pool. */
export interface PoolEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly note: string;
  readonly action: string;
}

/** The claim an Event is about: its name and uid (it may be deleted already: a release). */
export interface ClaimEventTarget {
  readonly name: string;
  readonly uid: string;
}

/** Result of a SubjectAccessReview. */
export interface AccessDecision {
  readonly allowed: boolean;
  readonly reason?: string;
}

/** What a SubjectAccessReview asks. */
export interface AccessQuestion {
  readonly user: string;
  readonly groups: readonly string[];
  readonly uid?: string;
  readonly extra?: Readonly<Record<string, readonly string[]>>;
  readonly namespace: string;
  readonly group: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly name?: string;
  readonly verb: string;
}

/** What a dry-run create answered: the object as it would be stored, and the API server's warnings. */
export interface DryRun {
  readonly vm: VirtualMachine;
  readonly warnings: readonly string[];
}

/** What a TokenReview says about a bearer token. */
export interface TokenIdentity {
  readonly authenticated: boolean;
  /** The audiences the token is valid for among those asked (empty: the API server's own). */
  readonly audiences: readonly string[];
  readonly user?: {
    readonly username: string;
    readonly uid?: string;
    readonly groups: readonly string[];
    readonly extra: Readonly<Record<string, readonly string[]>>;
  };
  /** Why the token was not authenticated, in the API server's words. */
  readonly error?: string;
}

/** Requests made, by verb and outcome, for benchmarks and metrics. */
export type RequestCounts = Readonly<Record<string, number>>;

/**
 * Every API call vmpool makes. Reads are consistent (no cache) unless one says otherwise; creates
 * use fixed names; deletes carry preconditions; updates are conditioned on
 * `metadata.resourceVersion` of the object passed.
 */
export interface Kube {
  /**
   * One pool, read consistently; or, with `notOlderThan`, from the API server's watch cache as it
   * is once it has seen at least that resourceVersion (no read from etcd, but possibly a few
   * milliseconds behind it).
   */
  getPool(
    namespace: string,
    name: string,
    notOlderThan?: string,
  ): Promise<Outcome<VirtualMachinePool>>;
  /**
   * All pools in a namespace, or in the cluster when `namespace` is undefined; with `page`, one
   * page of them (its `next` continues the list), so a scan of any size holds one page at a time.
   */
  listPools(namespace?: string, page?: PageRequest): Promise<Listed<VirtualMachinePool>>;
  /**
   * VMs matching a label selector, in a namespace or cluster-wide; with `page`, one page of them (or
   * all of them in pages of its `limit`, when it says `all`).
   */
  listVms(
    namespace: string | undefined,
    labelSelector: string,
    page?: PageRequest,
  ): Promise<Listed<VirtualMachine>>;
  /** Disks matching a label selector, in a namespace or cluster-wide; `page` as for {@link listVms}. */
  listDisks(
    namespace: string | undefined,
    labelSelector: string,
    page?: PageRequest,
  ): Promise<Listed<VirtualDisk>>;
  getVm(namespace: string, name: string): Promise<Outcome<VirtualMachine>>;
  createVm(namespace: string, vm: VirtualMachine): Promise<Outcome<VirtualMachine>>;
  createDisk(namespace: string, disk: VirtualDisk): Promise<Outcome<VirtualDisk>>;
  /**
   * Server-side dry-run create (nothing is stored) with field validation set to warn: the VM API's
   * refusal comes back as `invalid`, fields it does not know as warnings.
   */
  dryRunCreateVm(namespace: string, vm: VirtualMachine): Promise<Outcome<DryRun>>;
  updateVm(vm: VirtualMachine): Promise<Outcome<VirtualMachine>>;
  updateDisk(disk: VirtualDisk): Promise<Outcome<VirtualDisk>>;
  /** PUT of the main resource (spec, metadata), conditioned on its resourceVersion. */
  updatePool(pool: VirtualMachinePool): Promise<Outcome<VirtualMachinePool>>;
  /** PUT of the status subresource, conditioned on the pool's resourceVersion. */
  updatePoolStatus(pool: VirtualMachinePool): Promise<Outcome<VirtualMachinePool>>;
  deleteVm(namespace: string, name: string, pre: Preconditions): Promise<Outcome<undefined>>;
  deleteDisk(namespace: string, name: string, pre: Preconditions): Promise<Outcome<undefined>>;
  /** Records an events.k8s.io/v1 Event regarding the pool (best effort). */
  recordEvent(pool: EventPool, event: PoolEvent): Promise<Outcome<undefined>>;
  /**
   * VirtualMachineClaims of a namespace, or of the cluster when `namespace` is undefined
   * (vmpool.virtualization.deckhouse.io/v1alpha1), parsed one by one: a claim its model refuses is
   * named in `malformed`, never failing the others.
   */
  listClaims(
    namespace: string | undefined,
    page?: PageRequest,
  ): Promise<Listed<VirtualMachineClaim>>;
  /** PUT of a claim's status subresource, conditioned on the claim's resourceVersion. */
  updateClaimStatus(claim: VirtualMachineClaim): Promise<Outcome<VirtualMachineClaim>>;
  /** Records an events.k8s.io/v1 Event regarding a claim of `namespace` (best effort). */
  recordClaimEvent(
    namespace: string,
    claim: ClaimEventTarget,
    event: PoolEvent,
  ): Promise<Outcome<undefined>>;
  subjectAccessReview(question: AccessQuestion): Promise<Outcome<AccessDecision>>;
  /** Asks the API server who a bearer token belongs to, if it is valid for one of `audiences`. */
  tokenReview(token: string, audiences: readonly string[]): Promise<Outcome<TokenIdentity>>;
  /** Reads a ConfigMap's data (for the front-proxy CA in kube-system). */
  getConfigMapData(namespace: string, name: string): Promise<Outcome<Record<string, string>>>;
  /** Requests made so far, keyed `verb` and `verb:outcome`. */
  counts(): RequestCounts;
}
