/**
 * Small typed builders for domain unit tests: a pool shaped like the user guide's `runners` pool, its
 * member VMs, its disks, and a seeded source of randomness.
 * @module
 */
import type {
  BlockDeviceRef,
  Condition,
  Quantity,
  VirtualDisk,
  VirtualMachine,
  VirtualMachinePool,
  PoolStatus,
  ScaleDownPolicy,
} from '../../shared/api/index.js';
import { API_VERSION, DiskTemplate, VirtualMachineTemplate, keys } from '../../shared/api/index.js';
import { runnersPool } from '../../local/guide.js';
import { templateHash } from '../../shared/domain/index.js';
import type { Observed } from '../../shared/domain/index.js';

/** A fixed instant tests use as "now". */
export const NOW = new Date('2025-01-01T12:00:00Z');

/** `NOW` shifted by `ms` milliseconds, as RFC 3339 UTC with second precision. */
export function at(ms: number, base: Date = NOW): string {
  return new Date(base.getTime() + ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

/** Overrides of the `runners` pool. */
export interface PoolOverrides {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  replicas?: number;
  scaleDownPolicy?: ScaleDownPolicy;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  virtualMachineTemplate?: VirtualMachineTemplate;
  virtualDiskTemplates?: DiskTemplate[];
  status?: PoolStatus;
}

/** The `runners` pool's disk templates: `root` (Delete) and `cache` (Retain, keep 5, ttl 30m). */
export function runnersDiskTemplates(): DiskTemplate[] {
  return DiskTemplate.array().parse(runnersPool('ci').spec.virtualDiskTemplates);
}

/** The `runners` pool's VM template. */
export function runnersVmTemplate(): VirtualMachineTemplate {
  return VirtualMachineTemplate.parse(runnersPool('ci').spec.virtualMachineTemplate);
}

/** The user guide's `runners` pool (namespace `ci`, 3 replicas, NewestFirst), with overrides. */
export function pool(o: PoolOverrides = {}): VirtualMachinePool {
  const p: VirtualMachinePool = {
    apiVersion: API_VERSION,
    kind: 'VirtualMachinePool',
    metadata: {
      name: o.name ?? 'runners',
      namespace: o.namespace ?? 'ci',
      uid: o.uid ?? 'pool-uid-1',
      generation: o.generation ?? 1,
      resourceVersion: '100',
      creationTimestamp: at(-24 * HOUR),
    },
    spec: {
      replicas: o.replicas ?? 3,
      scaleDownPolicy: o.scaleDownPolicy ?? 'NewestFirst',
      virtualMachineTemplate: o.virtualMachineTemplate ?? runnersVmTemplate(),
      virtualDiskTemplates: o.virtualDiskTemplates ?? runnersDiskTemplates(),
    },
  };
  if (o.labels !== undefined) p.metadata.labels = o.labels;
  if (o.annotations !== undefined) p.metadata.annotations = o.annotations;
  if (o.deletionTimestamp !== undefined) p.metadata.deletionTimestamp = o.deletionTimestamp;
  if (o.status !== undefined) p.status = o.status;
  return p;
}

/** Options of a member VM. */
export interface VmOptions {
  /** creationTimestamp (RFC 3339); default one hour before NOW. */
  created?: string;
  /** status.phase; default Running. */
  phase?: string;
  /** true (NOW) or an RFC 3339 deletionTimestamp. */
  terminating?: boolean | string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** blockDeviceRefs; default `<vm>-root` and `cache` placeholder replaced by `<vm>-cache`, plus the ISO. */
  refs?: BlockDeviceRef[];
  conditions?: Condition[];
  generation?: number;
  observedGeneration?: number;
  /** default `uid-<name>`. */
  uid?: string;
}

/** A member VM of `p`: pool-uid and pool labels, the pool as controller owner. */
export function vm(p: VirtualMachinePool, name: string, o: VmOptions = {}): VirtualMachine {
  const poolName = p.metadata.name ?? '';
  const refs: BlockDeviceRef[] = o.refs ?? [
    { kind: 'VirtualDisk', name: `${name}-root` },
    { kind: 'VirtualDisk', name: `${name}-cache` },
    { kind: 'ClusterVirtualImage', name: 'tools-iso' },
  ];
  const v: VirtualMachine = {
    apiVersion: API_VERSION,
    kind: 'VirtualMachine',
    metadata: {
      name,
      namespace: p.metadata.namespace,
      uid: o.uid ?? `uid-${name}`,
      generation: o.generation ?? 1,
      creationTimestamp: o.created ?? at(-HOUR),
      labels: { [keys.poolUid]: p.metadata.uid ?? '', [keys.pool]: poolName, ...o.labels },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: 'VirtualMachinePool',
          name: poolName,
          uid: p.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { ...structuredClone(p.spec.virtualMachineTemplate.spec ?? {}), blockDeviceRefs: refs },
    status: {
      phase: o.phase ?? 'Running',
      observedGeneration: o.observedGeneration ?? o.generation ?? 1,
      conditions: o.conditions ?? [],
    },
  };
  if (o.annotations !== undefined) v.metadata.annotations = o.annotations;
  if (o.terminating !== undefined && o.terminating !== false)
    v.metadata.deletionTimestamp = o.terminating === true ? at(0) : o.terminating;
  return v;
}

/** Options of a pool disk. */
export interface DiskOptions {
  /** disk-template label; default `cache`. */
  template?: string;
  /** status.phase; default Ready. */
  phase?: string;
  /** free-since annotation (RFC 3339). */
  freeSince?: string;
  /** spec.persistentVolumeClaim.size; default the template's. */
  size?: Quantity;
  /** 'pool' (default) or the VM that owns it. */
  owner?: 'pool' | VirtualMachine;
  /** true (NOW) or an RFC 3339 deletionTimestamp. */
  terminating?: boolean | string;
  /** default `uid-<name>`. */
  uid?: string;
  /** resourceVersion; default '1'. */
  rv?: string;
}

/** A disk labelled for `p` and a template, controlled by the pool or by a VM. */
export function disk(p: VirtualMachinePool, name: string, o: DiskOptions = {}): VirtualDisk {
  const template = o.template ?? 'cache';
  const t = p.spec.virtualDiskTemplates.find((x) => x.name === template);
  const owner = o.owner ?? 'pool';
  const ownerRef =
    owner === 'pool'
      ? { kind: 'VirtualMachinePool', name: p.metadata.name ?? '', uid: p.metadata.uid ?? '' }
      : {
          kind: 'VirtualMachine',
          name: owner.metadata.name ?? '',
          uid: owner.metadata.uid ?? '',
        };
  const spec = structuredClone(t?.spec ?? {});
  const size = o.size ?? t?.spec.persistentVolumeClaim?.size;
  if (size !== undefined) spec.persistentVolumeClaim = { ...spec.persistentVolumeClaim, size };
  const d: VirtualDisk = {
    apiVersion: API_VERSION,
    kind: 'VirtualDisk',
    metadata: {
      name,
      namespace: p.metadata.namespace,
      uid: o.uid ?? `uid-${name}`,
      resourceVersion: o.rv ?? '1',
      creationTimestamp: at(-2 * HOUR),
      labels: {
        [keys.poolUid]: p.metadata.uid ?? '',
        [keys.pool]: p.metadata.name ?? '',
        [keys.diskTemplate]: template,
      },
      ownerReferences: [
        { apiVersion: API_VERSION, ...ownerRef, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec,
    status: { phase: o.phase ?? 'Ready' },
  };
  if (o.freeSince !== undefined) d.metadata.annotations = { [keys.freeSince]: o.freeSince };
  if (o.terminating !== undefined && o.terminating !== false)
    d.metadata.deletionTimestamp = o.terminating === true ? at(0) : o.terminating;
  return d;
}

/** A member of `p` on the current revision whose disks exist: `<name>-root` (Delete) and a Retain cache. */
export function steady(
  p: VirtualMachinePool,
  name: string,
  o: VmOptions & { cache?: string } = {},
): { vm: VirtualMachine; disks: VirtualDisk[] } {
  const hash = templateHash(p.spec.virtualMachineTemplate);
  const cache = o.cache ?? `${p.metadata.name ?? ''}-cache-${name.slice(-5)}b`;
  const v = vm(p, name, {
    ...o,
    labels: { [keys.templateHash]: hash, ...o.labels },
    annotations: { [keys.patchedTemplateHash]: hash, ...o.annotations },
    refs: o.refs ?? [
      { kind: 'VirtualDisk', name: `${name}-root` },
      { kind: 'VirtualDisk', name: cache },
      { kind: 'ClusterVirtualImage', name: 'tools-iso' },
    ],
  });
  return {
    vm: v,
    disks: [disk(p, `${name}-root`, { template: 'root', owner: v }), disk(p, cache)],
  };
}

export function observed(
  p: VirtualMachinePool,
  members: Array<{ vm: VirtualMachine; disks: VirtualDisk[] }>,
  extra: VirtualDisk[] = [],
): Observed {
  return {
    pool: p,
    vms: members.map((m) => m.vm),
    disks: [...members.flatMap((m) => m.disks), ...extra],
  };
}

/** A seeded PRNG: the same seed replays the same names. */
export { seededRandom } from '../../local/simulator/rng.js';

/** `levels` objects nested in one another, `leaf` at the bottom; `reversed` inserts keys the other way. */
export function nested(levels: number, leaf: unknown = 'bottom', reversed = false): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) {
    const key = `k${String(i % 3)}`;
    v = reversed ? { [key]: i, deeper: v } : { deeper: v, [key]: i };
  }
  return v;
}

/** The runners pool with `field` as a pass-through field of its VM template spec. */
export function withField(field: unknown): VirtualMachinePool {
  const t = runnersVmTemplate();
  return pool({ replicas: 1, virtualMachineTemplate: { ...t, spec: { ...t.spec, extra: field } } });
}
