/**
 * What a disk-GC pass keeps of each object it lists: only what {@link planGc} reads. A pass lists
 * every pool and every pool-labelled disk of the cluster once (two lists, no per-pool selector the
 * API server would test value by value), so it keeps of them a few hundred bytes each, and drops at
 * once the pools that can collect nothing and the disks that are not free.
 * @module
 */
import type { DiskTemplate, VirtualDisk, VirtualMachinePool } from '../../api/index.js';
import { controllerOf, keys } from '../../api/index.js';
import { policyOf, freedAt } from './disks.js';
import { attached } from './in-use.js';
import { parseDuration } from '../formats/index.js';
import { isTerminating } from '../fleet/index.js';

/**
 * Of a pool, what {@link planGc} reads (its identity, paused, disk templates and intent bindings)
 * and what an Event about it names (its resourceVersion).
 */
export interface GcPool {
  readonly metadata: Pick<
    VirtualMachinePool['metadata'],
    'name' | 'namespace' | 'uid' | 'resourceVersion' | 'deletionTimestamp'
  >;
  readonly spec: {
    readonly paused?: boolean | undefined;
    /** Of each template, its name and reclaim: a template's disk spec is not needed to collect. */
    readonly virtualDiskTemplates: readonly GcTemplate[];
  };
  readonly status?:
    | {
        readonly intent?:
          { readonly bindings?: readonly { readonly disk: string }[] | undefined } | undefined;
      }
    | undefined;
}

/** Of a disk template, what a GC pass reads. */
export type GcTemplate = Pick<DiskTemplate, 'name' | 'reclaim'>;

/** The templates whose free disks a GC pass may collect: Retain, with a ttl it can read. */
export function collectedTemplates(pool: GcPool): GcTemplate[] {
  return pool.spec.virtualDiskTemplates.filter(
    (t) =>
      policyOf(t) === 'Retain' &&
      t.reclaim?.ttl !== undefined &&
      parseDuration(t.reclaim.ttl) !== undefined,
  );
}

/**
 * True when a GC pass may collect some disk of the pool: not being deleted, not paused, with a
 * template of {@link collectedTemplates}. A pass forgets every other pool as soon as it reads it.
 */
export function mayCollect(pool: GcPool): boolean {
  return (
    pool.metadata.deletionTimestamp === undefined &&
    pool.spec.paused !== true &&
    collectedTemplates(pool).length > 0
  );
}

/**
 * The {@link GcPool} of a pool: of its templates only those a pass collects from, as name and
 * reclaim; of its intent only the disks bound. Its VM template, status and the rest are not kept.
 */
export function gcPool(pool: VirtualMachinePool): GcPool {
  const { name, namespace, uid, resourceVersion, deletionTimestamp } = pool.metadata;
  const bindings = pool.status?.intent?.bindings?.map((b) => ({ disk: b.disk }));
  const templates = collectedTemplates(pool).map((t) => ({ name: t.name, reclaim: t.reclaim }));
  return {
    metadata: { name, namespace, uid, resourceVersion, deletionTimestamp },
    spec: { paused: pool.spec.paused, virtualDiskTemplates: templates },
    ...(bindings === undefined ? {} : { status: { intent: { bindings } } }),
  };
}

/**
 * True when a disk may be collected some day as it is: stamped free, not Terminating, attached to no
 * VM. No other disk bears on a pass ({@link planGc} keeps or collects free disks only), so a pass
 * keeps only these.
 */
export function freeCandidate(disk: VirtualDisk): boolean {
  return freedAt(disk) !== undefined && !isTerminating(disk) && !attached(disk);
}

/**
 * Of a free disk, what {@link planGc} reads: identity and version (the delete's preconditions), its
 * pool label and controller, template, free-since stamp and phase.
 */
export function gcDisk(disk: VirtualDisk): VirtualDisk {
  const { name, namespace, uid, resourceVersion, labels, annotations } = disk.metadata;
  const owner = controllerOf(disk.metadata);
  return {
    metadata: {
      name,
      namespace,
      uid,
      resourceVersion,
      labels: kept(labels, keys.poolUid, keys.diskTemplate),
      annotations: kept(annotations, keys.freeSince),
      ...(owner === undefined ? {} : { ownerReferences: [owner] }),
    },
    spec: {},
    ...(disk.status?.phase === undefined ? {} : { status: { phase: disk.status.phase } }),
  };
}

/**
 * Of `from`, the entries named, and none other. Written out, not mapped: a pass calls it twice for
 * each of 20,000 disks.
 */
function kept(
  from: Readonly<Record<string, string>> | undefined,
  ...names: readonly string[]
): Record<string, string> {
  const out: Record<string, string> = {};
  if (from === undefined) return out;
  for (const k of names) {
    const v = from[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}
