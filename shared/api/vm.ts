/**
 * The parts of a VirtualMachine (and of its spec inside a pool template) that vmpool reads and writes.
 * Everything else passes through untouched.
 * @module
 */
import { z } from 'zod';
import { Condition, ObjectMeta } from './meta.js';

/** Kinds a block device reference may name. */
export const BlockDeviceKind = z.enum(['ClusterVirtualImage', 'VirtualImage', 'VirtualDisk']);
export type BlockDeviceKind = z.infer<typeof BlockDeviceKind>;

/** One entry of `spec.blockDeviceRefs`; its position is the boot order unless `bootOrder` is set. */
export const BlockDeviceRef = z.looseObject({
  kind: BlockDeviceKind,
  name: z.string().min(1),
  bootOrder: z.int32().min(1).optional(),
});
export type BlockDeviceRef = z.infer<typeof BlockDeviceRef>;

/** The VirtualMachineSpec fields the pool itself reads; the rest passes through. */
export const VirtualMachineSpec = z
  .looseObject({
    blockDeviceRefs: z.array(BlockDeviceRef).min(1).max(16).optional(),
    osType: z.enum(['Windows', 'Generic', 'Legacy']).optional(),
    runPolicy: z
      .enum(['AlwaysOn', 'AlwaysOff', 'Manual', 'AlwaysOnUnlessStoppedManually'])
      .optional(),
    disruptions: z
      .looseObject({ restartApprovalMode: z.enum(['Manual', 'Automatic']).optional() })
      .optional(),
    provisioning: z
      .looseObject({ type: z.enum(['UserData', 'UserDataRef', 'SysprepRef']) })
      .optional(),
  })
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
      observedGeneration: z.number().int().optional(),
      conditions: z.array(Condition).optional(),
      /** The node the VM runs on (set by the platform once scheduled); spreads scale-downs. */
      nodeName: z.string().optional(),
    })
    .optional(),
});
export type VirtualMachine = z.infer<typeof VirtualMachine>;

/** Condition a VM raises while restart-requiring changes wait. */
export const AWAITING_RESTART = 'AwaitingRestartToApplyConfiguration';
/** Condition that decides which member keeps a disk two members reference. */
export const BLOCK_DEVICES_READY = 'BlockDevicesReady';
