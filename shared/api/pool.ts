/**
 * VirtualMachinePool: every spec and status field of the reference API, plus vmpool's recorded intent.
 * @module
 */
import { z } from 'zod';
import { Condition, Integer, ObjectMeta } from './meta.js';
import { VirtualMachineSpec } from './vm.js';
import { VirtualDiskSpec } from './disk.js';
import { goDuration } from './duration.js';
import { ClaimBinding, PoolClaims } from './claim.js';

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
  maxUnavailable:
    'rollout.maxUnavailable must be an integer of at least 1 or a percentage from 1% to 100%',
  maxUnhealthy:
    'healing.maxUnhealthy must be an integer of at least 1 or a percentage from 1% to 100%',
  keepRequiresTtl:
    'keep requires ttl; without ttl free disks are never garbage-collected, so keep would have no effect',
} as const;

const hasRefs =
  'has(self.virtualMachineTemplate.spec) && has(self.virtualMachineTemplate.spec.blockDeviceRefs)';

/** What happens to a replica's disk when the replica leaves the pool. */
export const Reclaim = z
  .looseObject({
    onScaleDown: z
      .enum(['Delete', 'Retain'])
      .default('Delete')
      .describe(
        'What happens to this disk when its replica leaves the pool. Delete (the default): the disk is deleted with the replica (it is owned by the VirtualMachine). Retain: the disk is owned by the pool, kept when the replica leaves, and reused by a later replica (Ready disks first, then the most recently freed).',
      ),
    keep: z
      .int32()
      .min(0)
      .default(0)
      .describe(
        'Retain only: how many of the most recently freed disks of this template are never garbage-collected, however long they are free. Default 0; requires ttl.',
      ),
    ttl: z
      .string()
      .optional()
      .describe(
        'Retain only: how long a free disk beyond keep may stay before it is garbage-collected, as a Go duration (30m, 1h30m). Unset: free disks are never collected.',
      ),
  })
  .describe('Reclaim policy of the disk when its replica leaves the pool.')
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
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
    .describe(
      "Name of the template, unique in the pool; the VirtualDisk reference in virtualMachineTemplate.spec.blockDeviceRefs that carries this name is replaced by the replica's disk. Lowercase RFC 1123 label, at most 63 characters.",
    ),
  reclaim: Reclaim.optional(),
  spec: VirtualDiskSpec,
});
export type DiskTemplate = z.infer<typeof DiskTemplate>;

/** The replica template: metadata to stamp and an ordinary VirtualMachineSpec. */
export const VirtualMachineTemplate = z.looseObject({
  metadata: z
    .looseObject({
      labels: z
        .record(z.string(), z.string())
        .optional()
        .describe(
          "Labels put on every replica (and applied to live replicas on change); the pool's own labels take precedence.",
        ),
      annotations: z
        .record(z.string(), z.string())
        .optional()
        .describe('Annotations put on every replica (and applied to live replicas on change).'),
    })
    .optional()
    .describe('Metadata stamped on every replica.'),
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

/** Warm standby: members kept ready beside the replicas, promoted first on a scale-up. */
export const Standby = z
  .looseObject({
    replicas: z
      .int32()
      .min(0)
      .describe(
        'How many standby members to keep beside spec.replicas, built from the current template with their disks and labelled vmpool.virtualization.deckhouse.io/standby: "true". They are not counted in status.replicas or readyReplicas (what /scale and an HPA read).',
      ),
    state: z
      .enum(['Stopped', 'Running'])
      .default('Stopped')
      .describe(
        'Stopped (the default): standby members are provisioned and kept stopped (runPolicy AlwaysOff until promoted). Running: they run idle, so a promotion is instant.',
      ),
    reuseOnScaleDown: z
      .boolean()
      .optional()
      .describe(
        'true: a member removed by a scale-down returns to the standby while the standby is short, instead of being deleted (Event ReturnedToStandby). Off by default: CI runners usually want fresh VMs.',
      ),
  })
  .describe(
    'Warm standby: extra members a scale-up promotes first (label removed, the template runPolicy restored; Event StandbyPromoted) before it creates new VMs; vmpool then refills the standby.',
  );
export type Standby = z.infer<typeof Standby>;

/** A budget or threshold: an integer of at least 1, or a percentage from 1% to 100%. */
const intOrPercent = (field: string, message: string) => ({
  'x-kubernetes-validations': [
    {
      rule: `!has(self.${field}) || (type(self.${field}) == int ? self.${field} >= 1 : self.${field}.matches('^(100|[1-9][0-9]?)%$'))`,
      message,
    },
  ],
});

/** Self-healing of members that never reach Running. */
export const Healing = z
  .looseObject({
    startupTimeout: goDuration(
      'A member whose runPolicy should keep it running and that is not Running this long (a Go duration, e.g. 10m) after its creation or its last start, or that sits in phase Degraded this long, is deleted and recreated under a fresh name (Events ReplicaUnhealthy, ReplicaReplaced). Members stopped on purpose are never replaced; protected members are reported, not replaced.',
    ),
    maxUnhealthy: z
      .union([Integer, z.string()])
      .optional()
      .describe(
        'Circuit breaker: when more members than this (an integer, or a percentage of spec.replicas plus standby.replicas, rounded down, at least 1) are unhealthy at once, healing replaces none of them and sets Healing=False (reason TooManyUnhealthy): so many failing together points at a cause replacements cannot fix. Default 50%.',
      ),
  })
  .describe(
    'Self-healing: replace members that fail to start, at most rollout.maxUnavailable at a time (default 25% with healing set). When replacements keep failing, vmpool backs off exponentially (state in status.healing) and sets condition Healing=False; when more than maxUnhealthy members are unhealthy at once, it replaces none.',
  )
  .meta(intOrPercent('maxUnhealthy', celMessages.maxUnhealthy));
export type Healing = z.infer<typeof Healing>;

/** Bounds how many members are disrupted at once. */
export const Rollout = z
  .looseObject({
    maxUnavailable: z
      .union([z.int32(), z.string()])
      .optional()
      .describe(
        'At most this many members (an integer, or a percentage of spec.replicas plus standby.replicas, rounded down, at least 1) are being restarted, replaced or healed at once; the next batch starts when the previous ones are Running on the new revision. Absent: 25% when spec.healing is set, else all at once.',
      ),
  })
  .describe('How template rollouts, healing and lifetime replacements are paced.')
  .meta(intOrPercent('maxUnavailable', celMessages.maxUnavailable));
export type Rollout = z.infer<typeof Rollout>;

/** `spec` of a pool. */
export const PoolSpec = z
  .looseObject({
    replicas: z
      .int32()
      .min(0)
      .optional()
      .describe(
        'Desired number of replicas (Terminating ones count until they are gone). Unset means 0. Set it with kubectl scale, an HPA or KEDA through the scale subresource.',
      ),
    scaleDownPolicy: ScaleDownPolicy.describe(
      'Which replicas leave on a scale-down that does not name them. NewestFirst or OldestFirst: by creation time (ties broken by the pool generation each was created at, then by name). Explicit: only replicas named through the scaledownwith subresource leave; lowering replicas without naming them is refused.',
    ),
    scaleDown: ScaleDown.optional(),
    standby: Standby.optional(),
    claims: PoolClaims.optional(),
    healing: Healing.optional(),
    rollout: Rollout.optional(),
    minReadySeconds: z
      .int32()
      .min(0)
      .optional()
      .describe(
        'A member counts as available (status.availableReplicas, condition Available) once it has been Running this many seconds, as Deployments count pods. Default 0.',
      ),
    maxMemberAge: goDuration(
      'A member older than this Go duration (e.g. 24h) is replaced under a fresh name, oldest first, within rollout.maxUnavailable (Event ReplicaExpired); with scaleDown.drainTimeout it drains first. Absent: members live forever.',
    ).optional(),
    paused: z
      .boolean()
      .optional()
      .describe(
        'true: vmpool creates, deletes and updates nothing for this pool (scaledownwith answers 409); status is still computed and condition Paused=True says so. Unpausing resumes from the live state.',
      ),
    virtualMachineTemplate: VirtualMachineTemplate.describe(
      'The VirtualMachine every replica is made from. A change rolls out to live replicas in place (the VM platform restarts them as its restartApprovalMode says); disk references keep their positions.',
    ),
    virtualDiskTemplates: z
      .array(DiskTemplate)
      .min(1)
      .max(16)
      .describe(
        'Per-replica disks, 1 to 16: each is referenced exactly once by a VirtualDisk entry of virtualMachineTemplate.spec.blockDeviceRefs. A size change grows existing disks (never shrinks them); other changes apply to new disks only.',
      )
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
export const Binding = z
  .looseObject({
    vm: z.string().describe('The member (existing or to be created).'),
    template: z.string().describe('The disk template the disk serves.'),
    disk: z.string().describe('The Retain disk bound to it.'),
  })
  .describe('A Retain disk bound to a member before the member references it.');
export type Binding = z.infer<typeof Binding>;

/** A member named with its uid, so a same-named newcomer is never mistaken for it. */
export const MemberRef = z.looseObject({
  name: z.string().describe('Name of the member.'),
  uid: z.string().describe('Its uid when recorded.'),
});
export type MemberRef = z.infer<typeof MemberRef>;

/** Self-healing back-off, recorded in the pool so a restarted function resumes it. */
export const HealingState = z
  .looseObject({
    rounds: z
      .int32()
      .describe(
        'Replacement rounds since the pool last had no unhealthy member; from the second on, replacements are failing.',
      ),
    lastRoundTime: z.string().describe('When the last round replaced members (RFC 3339).'),
  })
  .describe('Self-healing back-off state. Maintained by vmpool; do not edit.');
export type HealingState = z.infer<typeof HealingState>;

/**
 * Intent recorded in the pool's status by a resourceVersion-conditioned write before any side effect
 * (the fencing protocol): names to create, victims to delete, disks bound to members.
 */
export const Intent = z
  .looseObject({
    creates: z
      .array(z.string())
      .optional()
      .describe('Names of VirtualMachines recorded to be created and not yet seen.'),
    standbyCreates: z
      .array(z.string())
      .optional()
      .describe('The names among creates that are standby members.'),
    deletes: z
      .array(
        z.looseObject({
          name: z.string().describe('Name of the member.'),
          uid: z.string().describe('Its uid, so a same-named newcomer is never deleted.'),
          reason: z
            .enum(['Unhealthy', 'Expired'])
            .optional()
            .describe(
              'Set when the member is replaced (healing, maxMemberAge) rather than removed by a scale-down.',
            ),
        }),
      )
      .optional()
      .describe(
        'Members recorded to be deleted. An entry whose member is gone or Terminating is done and inert (its uid names no live member); a later status write drops it.',
      ),
    bindings: z.array(Binding).optional().describe('Retain disks recorded as bound to members.'),
    claims: z
      .array(ClaimBinding)
      .optional()
      .describe('Claims recorded as bound to members not marked claimed yet.'),
    promotions: z
      .array(MemberRef)
      .optional()
      .describe('Standby members recorded to be promoted that still carry the standby label.'),
    returns: z
      .array(MemberRef)
      .optional()
      .describe('Members recorded to return to the standby that do not carry the label yet.'),
  })
  .describe(
    'Work vmpool recorded, with a write conditioned on the pool resourceVersion, before doing it: a crashed or concurrent reconcile finishes it instead of doing more. Maintained by vmpool; do not edit.',
  );
export type Intent = z.infer<typeof Intent>;

/** `status` of a pool. */
export const PoolStatus = z.looseObject({
  observedGeneration: z
    .int()
    .optional()
    .describe('The pool generation this status was computed for.'),
  replicas: z
    .int32()
    .optional()
    .describe('Current number of members, Terminating ones included (what /scale reports).'),
  readyReplicas: z
    .int32()
    .optional()
    .describe('Members whose VirtualMachine phase is Running and that are not Terminating.'),
  desiredTemplateHash: z
    .string()
    .optional()
    .describe('Revision of the current virtualMachineTemplate (a stable hash of it).'),
  updatedReplicas: z
    .int32()
    .optional()
    .describe('Live members on the current virtualMachineTemplate revision.'),
  restartPendingReplicas: z
    .int32()
    .optional()
    .describe('Live members patched to the current revision that wait for a restart to apply it.'),
  protectedReplicas: z
    .int32()
    .optional()
    .describe(
      'Live members annotated vmpool.virtualization.deckhouse.io/protected: "true" (scale-in protection).',
    ),
  heldReplicas: z
    .int32()
    .optional()
    .describe(
      'Surplus replicas a scale-down keeps because only protected members could leave (0 when none is held).',
    ),
  claimedReplicas: z
    .int32()
    .optional()
    .describe('Live members bound to a VirtualMachineClaim; 0 when none is.'),
  pendingClaims: z
    .int32()
    .optional()
    .describe(
      'Claims of this pool waiting for a member (phase Pending), and claims being ended (Expired, Lost) until their status is written; 0 when none is. With claimedReplicas 0 and no binding recorded, it lets a reconcile started by anything but a claim skip reading claims.',
    ),
  idleReplicas: z
    .int32()
    .optional()
    .describe(
      'Members a claim could take now: Ready replicas on the current template, not claimed, draining, protected or standby.',
    ),
  availableReplicas: z
    .int32()
    .optional()
    .describe('Replicas Running for at least spec.minReadySeconds (standby members not counted).'),
  standbyReplicas: z
    .int32()
    .optional()
    .describe('Standby members (Terminating ones included); 0 without spec.standby.'),
  readyStandbyReplicas: z
    .int32()
    .optional()
    .describe(
      'Standby members ready to be promoted: in the phase standby.state asks for (Stopped or Running); 0 without spec.standby.',
    ),
  unhealthyReplicas: z
    .int32()
    .optional()
    .describe(
      'Members not Running startupTimeout after their start (or Degraded that long); 0 without spec.healing.',
    ),
  healing: HealingState.optional(),
  drainingReplicas: z
    .int32()
    .optional()
    .describe(
      'Members asked to leave that are draining (annotated vmpool.virtualization.deckhouse.io/drain-requested), still counted in replicas.',
    ),
  selector: z
    .string()
    .optional()
    .describe("Label selector of the pool's members (for /scale, HPA and kubectl get -l)."),
  conditions: z
    .array(Condition)
    .optional()
    .describe(
      'Available, Progressing (while converging), Synced, and when set up Paused and Healing, with reasons and messages.',
    )
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
