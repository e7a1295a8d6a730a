/**
 * The parts of a VirtualDisk that vmpool reads and writes.
 * @module
 */
import { z } from 'zod';
import { ObjectMeta, Quantity } from './meta.js';

/** A VirtualDiskSpec: `persistentVolumeClaim.size` is read, the rest passes through. */
export const VirtualDiskSpec = z
  .looseObject({
    dataSource: z
      .looseObject({
        type: z
          .enum(['HTTP', 'ContainerImage', 'ObjectRef', 'Upload'])
          .describe('Kind of source; the fields that go with it pass through to the VirtualDisk.'),
      })
      .meta({ 'x-kubernetes-preserve-unknown-fields': true })
      .optional()
      .describe(
        'What a new disk is filled from (an image, a URL, an upload); unset: a blank disk.',
      ),
    persistentVolumeClaim: z
      .looseObject({
        size: Quantity.optional().describe(
          'Size of the disk (30Gi). Raising it grows existing disks; lowering it is refused.',
        ),
        storageClassName: z
          .string()
          .optional()
          .describe('StorageClass of new disks; unset: the cluster default.'),
      })
      .optional()
      .describe('The volume behind the disk.'),
  })
  .describe('A VirtualDiskSpec of the VM platform, used for every new disk of this template.');
export type VirtualDiskSpec = z.infer<typeof VirtualDiskSpec>;

/** Disk phases the pool distinguishes: `Ready` is preferred for reuse, `Failed` never reused. */
export const DiskPhase = z.enum([
  'Pending',
  'Provisioning',
  'WaitForUserUpload',
  'WaitForFirstConsumer',
  'Ready',
  'Resizing',
  'Failed',
  'PVCLost',
  'Exporting',
  'Terminating',
  'Migrating',
]);

/**
 * An entry of `status.attachedToVirtualMachines`: a VM the platform sees using the disk (`mounted`
 * while it is plugged in). The platform's CRD requires neither field, so neither is required here.
 */
const AttachedVm = z.looseObject({
  name: z.string().optional(),
  mounted: z.boolean().optional(),
});

/** A VirtualDisk as read from the API server. */
export const VirtualDisk = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta,
  spec: VirtualDiskSpec.default({}),
  status: z
    .looseObject({
      phase: z.string().optional(),
      capacity: z.string().optional(),
      attachedToVirtualMachines: z.array(AttachedVm).optional(),
    })
    .optional(),
});
export type VirtualDisk = z.infer<typeof VirtualDisk>;
