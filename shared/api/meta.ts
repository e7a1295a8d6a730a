/**
 * Kubernetes object metadata and the names vmpool shares with the reference implementation.
 * @module
 */
import { z } from 'zod';

/** The API group and version of pools, VMs and disks. */
export const GROUP = 'virtualization.deckhouse.io';
/** Served version of every resource vmpool reads and writes. */
export const VERSION = 'v1alpha2';
/** `apiVersion` of pools, VMs and disks. */
export const API_VERSION = `${GROUP}/${VERSION}`;
/** The aggregated group that serves `scaledownwith`. */
export const SUBRESOURCES_GROUP = `subresources.${GROUP}`;
/**
 * vmpool's own group for `scaledownwith`, used where another backend (the virtualization platform's
 * aggregated API) already serves {@link SUBRESOURCES_GROUP}. Same version and path shape.
 */
export const OWN_SUBRESOURCES_GROUP = `subresources.vmpool.${GROUP}`;

/** The path of a pool's `scaledownwith` under an aggregated group. */
export function scaleDownWithPath(group: string, namespace: string, pool: string): string {
  return `/apis/${group}/${VERSION}/namespaces/${namespace}/virtualmachinepools/${pool}/scaledownwith`;
}

/**
 * The label that marks an object as vmpool's (its CRD, and everything knative/base and `npm start`
 * install), value {@link VMPOOL}: vmpool updates or deletes such objects, and leaves others alone.
 */
export const PART_OF_LABEL = 'app.kubernetes.io/part-of';
/** The value of vmpool's ownership labels. */
export const VMPOOL = 'vmpool';

const PREFIX = 'vmpool.virtualization.deckhouse.io/';

/** Labels and annotations, byte-identical to the reference implementation's. */
export const keys = {
  /** label on VMs and disks: the pool's uid; the member selector. */
  poolUid: `${PREFIX}pool-uid`,
  /** label on VMs and disks: the pool's name, for humans. */
  pool: `${PREFIX}pool`,
  /** label on VMs: the template revision the VM is effectively on. */
  templateHash: `${PREFIX}template-hash`,
  /** annotation on VMs: the revision the VM spec was last patched to. */
  patchedTemplateHash: `${PREFIX}patched-template-hash`,
  /** label on disks: the `virtualDiskTemplates[].name` the disk belongs to. */
  diskTemplate: `${PREFIX}disk-template`,
  /** annotation on free Retain disks: RFC 3339 UTC, second precision. */
  freeSince: `${PREFIX}free-since`,
  /**
   * annotation on VMs (vmpool's own): the pool's `metadata.generation` the member was planned at.
   * creationTimestamp has second precision, so a scale-up and the batch before it often tie; the
   * generation (bumped by every `/scale` write) still tells which is newer.
   */
  createdGeneration: `${PREFIX}created-generation`,
  /** annotation on pools (vmpool's own): scaledownwith targets recorded with the decrement. */
  scaleDownTargets: `${PREFIX}scale-down-targets`,
  /**
   * annotation on pools (vmpool's own): keys of the latest scaledownwith CloudEvents carried out,
   * space-separated, newest last, so a redelivery is answered as done instead of refused.
   */
  scaleDownRequests: `${PREFIX}scale-down-requests`,
  /** annotation on members (set by people or agents): `"true"` keeps the member out of every scale-down. */
  protected: `${PREFIX}protected`,
  /**
   * annotation on members (set by people or agents): an int32; lower is removed first, as
   * `controller.kubernetes.io/pod-deletion-cost` (a malformed value counts as 0).
   */
  deletionCost: `${PREFIX}deletion-cost`,
  /** annotation on members (vmpool's own): RFC 3339 time vmpool asked the member to drain. */
  drainRequested: `${PREFIX}drain-requested`,
  /** annotation on members (set by the agent or a person): `"true"` once a draining member may go. */
  drained: `${PREFIX}drained`,
  /**
   * label on members (vmpool's own): `"true"` on a warm standby member, which `status.replicas`,
   * `/scale` and the scale selector leave out until a scale-up promotes it.
   */
  standby: `${PREFIX}standby`,
  /** annotation on members (vmpool's own): the name of the VirtualMachineClaim the member is bound to. */
  claimedBy: `${PREFIX}claimed-by`,
  /** annotation on members (vmpool's own): the uid of that claim, so a same-named newer claim is not it. */
  claimUid: `${PREFIX}claim-uid`,
  /** label on members (vmpool's own): `"true"` on a claimed member (`kubectl get vm -l`). */
  claimed: `${PREFIX}claimed`,
  /**
   * annotation on members (vmpool's own): `Delete` or `Recycle`, the release the claim asked for,
   * recorded at binding so a claim deleted outright is still released as it said.
   */
  onRelease: `${PREFIX}on-release`,
} as const;

/**
 * An integer as a CRD's `type: integer` without a format accepts it: int64, so it may exceed both
 * int32 and JavaScript's safe range (JSON.parse rounds such a value, but it stays an integer).
 * A model must not refuse what the served schema stores: the object would become unreadable.
 */
export const Integer = z
  .number()
  .refine(Number.isInteger, { message: 'Invalid input: expected an integer' })
  .meta({ type: 'integer' });

/** An ownerReference as the API server stores it. */
export const OwnerReference = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});
export type OwnerReference = z.infer<typeof OwnerReference>;

/** ObjectMeta, keeping every field vmpool does not model. */
export const ObjectMeta = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: Integer.optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  ownerReferences: z.array(OwnerReference).optional(),
  finalizers: z.array(z.string()).optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMeta>;

/** A metav1.Condition. */
export const Condition = z.looseObject({
  type: z.string().describe('Type of the condition (Available, Progressing, Synced, …).'),
  status: z.enum(['True', 'False', 'Unknown']).describe('True, False or Unknown.'),
  reason: z.string().optional().describe('Why, in one CamelCase word.'),
  message: z.string().optional().describe('Why, in words a person can act on.'),
  lastTransitionTime: z.string().optional().describe('When the status last changed (RFC 3339).'),
  observedGeneration: Integer.optional().describe(
    'The object generation the condition was set for.',
  ),
});
export type Condition = z.infer<typeof Condition>;

/** A resource quantity: an integer number of bytes or a string such as `30Gi`. */
export const Quantity = z.union([Integer, z.string()]);
export type Quantity = z.infer<typeof Quantity>;

/** The controller ownerReference of an object, if any. */
export function controllerOf(meta: ObjectMeta): OwnerReference | undefined {
  return meta.ownerReferences?.find((r) => r.controller === true);
}
