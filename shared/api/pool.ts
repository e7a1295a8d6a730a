/**
 * VirtualMachinePool: every spec and status field of the reference API, plus vmpool's recorded intent.
 * @module
 */
import { z } from 'zod';
import { Condition, ObjectMeta } from './meta.js';
import { VirtualMachineSpec } from './vm.js';
import { VirtualDiskSpec } from './disk.js';

/** Messages of the CRD's CEL rules, verbatim from the reference. */
export const celMessages = {
  everyTemplateReferenced:
    'each virtualDiskTemplates entry must be referenced by a VirtualDisk entry in virtualMachineTemplate.spec.blockDeviceRefs',
  everyRefNamesTemplate:
    'each VirtualDisk reference in virtualMachineTemplate.spec.blockDeviceRefs must name a virtualDiskTemplates entry',
  referencedOnce:
    'each virtualDiskTemplates entry must be referenced exactly once (no duplicate VirtualDisk references)',
  noLegacy:
    'The Legacy osType is not supported in a VirtualMachinePool: replicas of such a pool cannot be told apart, because provisioning is unavailable for these operating systems.',
  keepTtlOnlyRetain: 'keep and ttl are only valid with onScaleDown: Retain',
  keepRequiresTtl:
    'keep requires ttl; without ttl free disks are never garbage-collected, so keep would have no effect',
} as const;

const hasRefs =
  'has(self.virtualMachineTemplate.spec) && has(self.virtualMachineTemplate.spec.blockDeviceRefs)';

/** Go duration strings as `time.ParseDuration` accepts them (`30m`, `1h30m`, `1.5h`). */
export const DURATION_PATTERN =
  '^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*$';

/** What happens to a replica's disk when the replica leaves the pool. */
export const Reclaim = z
  .looseObject({
    onScaleDown: z.enum(['Delete', 'Retain']).default('Delete'),
    keep: z.int32().min(0).default(0),
    ttl: z.string().optional(),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: "self.onScaleDown == 'Retain' || (self.keep == 0 && !has(self.ttl))",
        message: celMessages.keepTtlOnlyRetain,
      },
      { rule: 'self.keep == 0 || has(self.ttl)', message: celMessages.keepRequiresTtl },
    ],
  });
export type Reclaim = z.infer<typeof Reclaim>;

/** One per-replica disk of the pool. */
export const DiskTemplate = z.looseObject({
  name: z
    .string()
    .max(63)
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/),
  reclaim: Reclaim.optional(),
  spec: VirtualDiskSpec,
});
export type DiskTemplate = z.infer<typeof DiskTemplate>;

/** The replica template: metadata to stamp and an ordinary VirtualMachineSpec. */
export const VirtualMachineTemplate = z.looseObject({
  metadata: z
    .looseObject({
      labels: z.record(z.string(), z.string()).optional(),
      annotations: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  spec: VirtualMachineSpec.optional(),
});
export type VirtualMachineTemplate = z.infer<typeof VirtualMachineTemplate>;

/** The three scale-down policies. */
export const ScaleDownPolicy = z.enum(['NewestFirst', 'OldestFirst', 'Explicit']);
export type ScaleDownPolicy = z.infer<typeof ScaleDownPolicy>;

/** How members leave on a scale-down (vmpool's own; absent: deleted at once, as the reference). */
export const ScaleDown = z
  .looseObject({
    drainTimeout: z
      .string()
      .optional()
      .describe(
        'Drain before removal: a leaving member is first annotated vmpool.virtualization.deckhouse.io/drain-requested (RFC 3339 time) and deleted once annotated vmpool.virtualization.deckhouse.io/drained: "true", or when this Go duration (e.g. 10m) has passed. Absent or 0: deleted at once.',
      ),
  })
  .describe('How members leave the pool on a scale-down.');
export type ScaleDown = z.infer<typeof ScaleDown>;

/** `spec` of a pool. */
export const PoolSpec = z
  .looseObject({
    replicas: z.int32().min(0).optional(),
    scaleDownPolicy: ScaleDownPolicy,
    scaleDown: ScaleDown.optional(),
    virtualMachineTemplate: VirtualMachineTemplate,
    virtualDiskTemplates: z
      .array(DiskTemplate)
      .min(1)
      .max(16)
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] }),
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: `${hasRefs} && self.virtualDiskTemplates.all(t, self.virtualMachineTemplate.spec.blockDeviceRefs.exists(r, r.kind == 'VirtualDisk' && r.name == t.name))`,
        message: celMessages.everyTemplateReferenced,
      },
      {
        rule: `${hasRefs} && self.virtualMachineTemplate.spec.blockDeviceRefs.filter(r, r.kind == 'VirtualDisk').all(r, self.virtualDiskTemplates.exists(t, t.name == r.name))`,
        message: celMessages.everyRefNamesTemplate,
      },
      {
        rule: `${hasRefs} && self.virtualMachineTemplate.spec.blockDeviceRefs.filter(r, r.kind == 'VirtualDisk').size() == self.virtualDiskTemplates.size()`,
        message: celMessages.referencedOnce,
      },
      {
        rule: "!has(self.virtualMachineTemplate.spec) || !has(self.virtualMachineTemplate.spec.osType) || self.virtualMachineTemplate.spec.osType != 'Legacy'",
        message: celMessages.noLegacy,
      },
    ],
  });
export type PoolSpec = z.infer<typeof PoolSpec>;

/** A Retain disk bound to a member (new or existing) before the VM references it. */
export const Binding = z.looseObject({
  vm: z.string(),
  template: z.string(),
  disk: z.string(),
});
export type Binding = z.infer<typeof Binding>;

/**
 * Intent recorded in the pool's status by a resourceVersion-conditioned write before any side effect
 * (the fencing protocol): names to create, victims to delete, disks bound to members.
 */
export const Intent = z.looseObject({
  creates: z.array(z.string()).optional(),
  deletes: z.array(z.looseObject({ name: z.string(), uid: z.string() })).optional(),
  bindings: z.array(Binding).optional(),
});
export type Intent = z.infer<typeof Intent>;

/** `status` of a pool. */
export const PoolStatus = z.looseObject({
  observedGeneration: z.int().optional(),
  replicas: z.int32().optional(),
  readyReplicas: z.int32().optional(),
  desiredTemplateHash: z.string().optional(),
  updatedReplicas: z.int32().optional(),
  restartPendingReplicas: z.int32().optional(),
  protectedReplicas: z
    .int32()
    .optional()
    .describe(
      'Surplus replicas kept because only members annotated vmpool.virtualization.deckhouse.io/protected: "true" could leave.',
    ),
  drainingReplicas: z
    .int32()
    .optional()
    .describe(
      'Members asked to leave that are draining (annotated vmpool.virtualization.deckhouse.io/drain-requested), still counted in replicas.',
    ),
  selector: z.string().optional(),
  conditions: z
    .array(Condition)
    .optional()
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  intent: Intent.optional(),
});
export type PoolStatus = z.infer<typeof PoolStatus>;

/** A VirtualMachinePool as read from the API server. */
export const VirtualMachinePool = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta,
  spec: PoolSpec,
  status: PoolStatus.optional(),
});
export type VirtualMachinePool = z.infer<typeof VirtualMachinePool>;

/** A scaledownwith target recorded in the pool (name plus uid, so a same-named newcomer is safe). */
export const RecordedTarget = z.looseObject({ name: z.string(), uid: z.string() });
export type RecordedTarget = z.infer<typeof RecordedTarget>;
