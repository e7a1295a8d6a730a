/**
 * The parts of a VirtualMachine (and of its spec inside a pool template) that vmpool reads and writes.
 * Everything else passes through untouched.
 * @module
 */
import { z } from 'zod';
import { Condition, Integer, ObjectMeta } from './meta.js';

/** Kinds a block device reference may name. */
export const BlockDeviceKind = z.enum(['ClusterVirtualImage', 'VirtualImage', 'VirtualDisk']);
export type BlockDeviceKind = z.infer<typeof BlockDeviceKind>;

/** One entry of `spec.blockDeviceRefs`; its position is the boot order unless `bootOrder` is set. */
export const BlockDeviceRef = z.looseObject({
  kind: BlockDeviceKind.describe(
    'ClusterVirtualImage, VirtualImage or VirtualDisk. A VirtualDisk entry names a virtualDiskTemplates entry in a pool template.',
  ),
  name: z
    .string()
    .min(1)
    .describe('Name of the image or disk (in a pool template, of the disk template).'),
  // The platform's CRD says only `minimum: 1` (int64): a tighter bound here made such a VM unreadable.
  bootOrder: Integer.min(1)
    .optional()
    .describe('Boot priority, 1 first; without it the position in the list decides.'),
});
export type BlockDeviceRef = z.infer<typeof BlockDeviceRef>;

/** The VirtualMachineSpec fields the pool itself reads; the rest passes through. */
export const VirtualMachineSpec = z
  .looseObject({
    blockDeviceRefs: z
      .array(BlockDeviceRef)
      .min(1)
      .max(16)
      .optional()
      .describe(
        'Disks and images of the VM, 1 to 16, in boot order unless bootOrder says otherwise.',
      ),
    osType: z
      .enum(['Windows', 'Generic', 'Legacy'])
      .optional()
      .describe(
        'Guest OS type; Legacy is not allowed in a pool (its replicas cannot be told apart).',
      ),
    runPolicy: z
      .enum(['AlwaysOn', 'AlwaysOff', 'Manual', 'AlwaysOnUnlessStoppedManually'])
      .optional()
      .describe(
        'Whether the VM platform keeps the VM running; a member stopped on purpose stays a member.',
      ),
    disruptions: z
      .looseObject({
        restartApprovalMode: z
          .enum(['Manual', 'Automatic'])
          .optional()
          .describe(
            'Automatic: the platform restarts a member to apply a template change; Manual (the default): the member waits for a restart.',
          ),
      })
      .optional()
      .describe('How the platform applies changes that need a restart.'),
    provisioning: z
      .looseObject({
        type: z
          .enum(['UserData', 'UserDataRef', 'SysprepRef'])
          .describe('Where the guest configuration comes from.'),
      })
      .optional()
      .describe('First-boot configuration of the guest (cloud-init user data or sysprep).'),
  })
  .describe(
    'A VirtualMachineSpec of the VM platform; fields not listed here are passed through to the VirtualMachine (a field the VM API does not know is reported as a warning when the pool is written).',
  )
  .meta({ 'x-kubernetes-preserve-unknown-fields': true });
export type VirtualMachineSpec = z.infer<typeof VirtualMachineSpec>;

/** VM phases (`status.phase`); only `Running` counts as ready for a pool. */
export const VirtualMachinePhase = z.enum([
  'Pending',
  'Running',
  'Terminating',
  'Stopped',
  'Stopping',
  'Starting',
  'Migrating',
  'Pause',
  'Degraded',
]);

/** A VirtualMachine as read from the API server. */
export const VirtualMachine = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta,
  spec: VirtualMachineSpec.default({}),
  status: z
    .looseObject({
      phase: z.string().optional(),
      observedGeneration: Integer.optional(),
      conditions: z.array(Condition).optional(),
      /** The node the VM runs on (set by the platform once scheduled); spreads scale-downs. */
      nodeName: z.string().optional(),
      /** The platform's phase history: when a member last started, and how long it has run. */
      stats: z
        .looseObject({
          phasesTransitions: z
            .array(
              z.looseObject({
                phase: z.string().optional(),
                timestamp: z.string().nullable().optional(),
              }),
            )
            .nullable()
            .optional(),
        })
        .nullable()
        .optional(),
    })
    .optional(),
});
export type VirtualMachine = z.infer<typeof VirtualMachine>;

/** Condition a VM raises while restart-requiring changes wait. */
export const AWAITING_RESTART = 'AwaitingRestartToApplyConfiguration';
/** Condition that decides which member keeps a disk two members reference. */
export const BLOCK_DEVICES_READY = 'BlockDevicesReady';
