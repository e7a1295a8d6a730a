/**
 * VirtualMachineClaim: a member of a pool taken by a CI job or a desktop user and kept untouched until
 * it is given back; and the pool's `spec.claims`, which keeps idle members on hand for claims.
 * @module
 */
import { z } from 'zod';
import { Condition, Integer, ObjectMeta } from './meta.js';
import { goDuration } from './duration.js';

/** The API group and version of claims (vmpool's own group, whatever group pools are served in). */
export const CLAIM_GROUP = 'vmpool.virtualization.deckhouse.io';
/** Served version of VirtualMachineClaim. */
export const CLAIM_VERSION = 'v1alpha1';
/** `apiVersion` of claims. */
export const CLAIM_API_VERSION = `${CLAIM_GROUP}/${CLAIM_VERSION}`;

/** What happens to a claimed member when its claim is released (deleted or expired). */
export const OnRelease = z.enum(['Delete', 'Recycle'], { error: 'must be Delete or Recycle' });
export type OnRelease = z.infer<typeof OnRelease>;

/** Messages of the claim CRD's validation rules. */
export const claimCelMessages = {
  poolNameImmutable: 'spec.poolName is immutable: create a new claim for another pool',
  minIdleWithinMax: 'claims.minIdle must not exceed claims.maxReplicas',
} as const;

/** `spec.claims` of a pool: idle members kept for claims, and how far claims may grow the pool. */
export const PoolClaims = z
  .looseObject({
    minIdle: z
      .int32()
      .min(0)
      .default(0)
      .describe(
        'Idle members kept on hand for claims: Ready replicas on the current template that are not claimed, draining, protected or standby. The pool runs max(spec.replicas, min(claimed + pending claims + minIdle, maxReplicas)) replicas. Default 0.',
      ),
    maxReplicas: z
      .int32({
        error: (i) =>
          i.input === undefined
            ? 'is required: the most replicas claims may grow the pool to'
            : 'must be an integer',
      })
      .min(0, { error: 'must not be negative' })
      .describe(
        'Required: the most replicas claims may grow the pool to, at least minIdle. spec.replicas (what /scale and an HPA set) stays the floor whatever this says.',
      ),
    onRelease: OnRelease.default('Delete').describe(
      'What happens to a member when its claim is released (deleted or expired), unless the claim says otherwise. Delete (the default): the member is deleted and the pool refills its idle members with fresh ones. Recycle: the claim marks are removed and the member is idle again (a pending rollout is applied to it first).',
    ),
    maxTTL: goDuration(
      "The longest spec.ttl a claim may ask for, as a Go duration (e.g. 8h); a claim without a ttl, or with a longer one, expires this long after it was bound. Absent: claims don't expire unless they set a ttl.",
    ).optional(),
  })
  .describe(
    'Claims: VirtualMachineClaim objects take idle members of this pool atomically, and a claimed member is never removed by a scale-down, healing, maxMemberAge or a rollout until it is released. Without this field claims still bind idle members but never grow the pool.',
  )
  .meta({
    'x-kubernetes-validations': [
      // Without maxReplicas the admission webhook answers (schema-edits.ts CLAIMS_LEFT_TO_ADMISSION).
      {
        rule: '!has(self.maxReplicas) || self.minIdle <= self.maxReplicas',
        message: claimCelMessages.minIdleWithinMax,
      },
    ],
  });
export type PoolClaims = z.infer<typeof PoolClaims>;

/** A claim recorded as bound to a member, in the pool's intent, before the member is marked. */
export const ClaimBinding = z
  .looseObject({
    claim: z.string().describe('Name of the claim.'),
    claimUid: z.string().describe('Its uid, so a same-named newer claim is never taken for it.'),
    vm: z.string().describe('The member bound to it.'),
    vmUid: z.string().describe("The member's uid."),
  })
  .describe('A claim bound to a member, recorded before the member is marked claimed.');
export type ClaimBinding = z.infer<typeof ClaimBinding>;

/** `spec` of a claim. */
export const ClaimSpec = z.looseObject({
  poolName: z
    .string({ error: 'is required: the VirtualMachinePool to take a member of' })
    .min(1, { error: 'must name a VirtualMachinePool' })
    .max(253, { error: 'must be at most 253 characters' })
    .describe('The VirtualMachinePool, in the claim namespace, to take a member of. Immutable.')
    .meta({
      'x-kubernetes-validations': [
        { rule: 'self == oldSelf', message: claimCelMessages.poolNameImmutable },
      ],
    }),
  holder: z
    .string()
    .max(253, { error: 'must be at most 253 characters' })
    .optional()
    .describe('Free text naming who holds the member (a job id, a user name); shown by kubectl.'),
  ttl: goDuration(
    'The claim expires this long after it was bound, as a Go duration (e.g. 2h); the member is then released and the claim stays with phase Expired. At most the pool claims.maxTTL. Absent: no expiry (unless the pool sets maxTTL).',
  ).optional(),
  onRelease: OnRelease.optional().describe(
    "What happens to the member on release: Delete (a fresh VM for every job) or Recycle (back to idle). Absent: the pool's claims.onRelease (default Delete).",
  ),
});
export type ClaimSpec = z.infer<typeof ClaimSpec>;

/** Where a claim stands. */
export const ClaimPhase = z.enum(['Pending', 'Bound', 'Expired', 'Lost']);
export type ClaimPhase = z.infer<typeof ClaimPhase>;

/** Why a claim is still Pending (reason of its `Bound=False` condition). */
export const PendingReason = z.enum([
  'NoIdleMember',
  'PoolAtMaximum',
  'PoolPaused',
  'PoolNotFound',
]);
export type PendingReason = z.infer<typeof PendingReason>;

/** `status` of a claim. */
export const ClaimStatus = z.looseObject({
  phase: ClaimPhase.optional().describe(
    "Pending: no idle member yet (condition Bound says why). Bound: the member is the holder's. Expired: the ttl passed and the member was released. Lost: the member vanished or was deleted by a person.",
  ),
  virtualMachineName: z.string().optional().describe('The member bound to this claim.'),
  virtualMachineUid: z.string().optional().describe("The member's uid."),
  boundAt: z.string().optional().describe('When the claim was bound (RFC 3339).'),
  expiresAt: z.string().optional().describe('When the claim expires (RFC 3339); absent: never.'),
  observedGeneration: Integer.optional().describe('The claim generation this status is for.'),
  conditions: z
    .array(Condition)
    .optional()
    .describe(
      'Bound, with a reason: Bound, NoIdleMember, PoolAtMaximum, PoolPaused, PoolNotFound, Expired, Lost.',
    )
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
});
export type ClaimStatus = z.infer<typeof ClaimStatus>;

/** A VirtualMachineClaim as read from the API server. */
export const VirtualMachineClaim = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta,
  spec: ClaimSpec,
  status: ClaimStatus.optional(),
});
export type VirtualMachineClaim = z.infer<typeof VirtualMachineClaim>;
