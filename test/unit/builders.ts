/**
 * Small typed builders for domain unit tests: a pool shaped like the user guide's `runners` pool, its
 * member VMs, its disks, and a seeded source of randomness.
 * @module
 */
import type {
  AdmissionRequest,
  BlockDeviceRef,
  Condition,
  Quantity,
  VirtualDisk,
  VirtualMachine,
  VirtualMachinePool,
  PoolStatus,
  ScaleDownPolicy,
} from '../../shared/api/index.js';
import {
  API_VERSION,
  AWAITING_RESTART,
  DiskTemplate,
  VirtualMachineTemplate,
  keys,
} from '../../shared/api/index.js';
import { runnersPool } from '../../local/guide.js';
import { seededRandom } from '../../local/simulator/rng.js';
import { nameOf, templateHash, validatePool } from '../../shared/domain/index.js';
import type {
  Accepted,
  Action,
  Candidate,
  Observed,
  Plan,
  planGc,
  planScaleDownWith,
  ScaleInput,
} from '../../shared/domain/index.js';

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

/**
 * A VM of the pool's namespace that is not its member: no controller reference, and the pool's labels
 * kept (`labelled`: something else controls it) or removed (a member detached as a ReplicaSet
 * detaches, or any VM a user made).
 */
export function notMember(
  p: VirtualMachinePool,
  name: string,
  o: VmOptions & { labelled?: boolean } = {},
): VirtualMachine {
  const v = vm(p, name, o);
  if (o.labelled !== true) v.metadata.labels = {};
  v.metadata.ownerReferences = [];
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
export { seededRandom };

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

// Self-healing, lifetime and budget tests (plan/replace*.test.ts).
/** A member of `p` in `phase`, its phase history ending with `history` (phase, ms from NOW). */
export function phasedMember(
  p: VirtualMachinePool,
  name: string,
  phase: string,
  o: {
    created?: number;
    history?: Array<[string, number]>;
    annotations?: Record<string, string>;
    runPolicy?: string;
  } = {},
) {
  const m = steady(p, name, {
    phase,
    created: at(o.created ?? -HOUR_AGO),
    ...(o.annotations === undefined ? {} : { annotations: o.annotations }),
  });
  const history = (o.history ?? []).map(([ph, ms]) => ({ phase: ph, timestamp: at(ms) }));
  m.vm.status = { ...m.vm.status, stats: { phasesTransitions: history } };
  if (o.runPolicy !== undefined) m.vm.spec = { ...m.vm.spec, runPolicy: o.runPolicy as 'Manual' };
  return m;
}

export const HOUR_AGO = 60 * MINUTE;

export function healingPool(
  o: {
    replicas?: number;
    timeout?: string;
    budget?: number | string;
    maxUnhealthy?: number | string;
  } = {},
) {
  const p = pool({ replicas: o.replicas ?? 2 });
  p.spec.healing = {
    startupTimeout: o.timeout ?? '5m',
    ...(o.maxUnhealthy === undefined ? {} : { maxUnhealthy: o.maxUnhealthy }),
  };
  if (o.budget !== undefined) p.spec.rollout = { maxUnavailable: o.budget };
  return p;
}

// Disk GC tests (disks/gc*.test.ts).
export function poolWithReclaim(
  reclaim: DiskTemplate['reclaim'],
  o: Parameters<typeof pool>[0] = {},
): VirtualMachinePool {
  const [root, cache] = runnersDiskTemplates();
  return pool({ ...o, virtualDiskTemplates: [root!, { ...cache!, reclaim }] });
}

export const ttl30Pool = poolWithReclaim({ onScaleDown: 'Retain', keep: 0, ttl: '30m' });

export const collectedNames = (plan: ReturnType<typeof planGc>): string[] =>
  plan.collect.map((c) => c.name);

// Validation tests (admission/validation*.test.ts).
export function validationMessages(p: VirtualMachinePool): string[] {
  return validatePool(p).map((v) => v.message);
}

export function withRefs(
  refs: {
    kind: 'VirtualDisk' | 'ClusterVirtualImage' | 'VirtualImage';
    name: string;
    bootOrder?: number;
  }[],
  templates?: DiskTemplate[],
): VirtualMachinePool {
  const t = runnersVmTemplate();
  return pool({
    virtualMachineTemplate: { ...t, spec: { ...t.spec, blockDeviceRefs: refs } },
    ...(templates === undefined ? {} : { virtualDiskTemplates: templates }),
  });
}

export function diskTemplate(name: string, extra: Partial<DiskTemplate> = {}): DiskTemplate {
  return { name, spec: { persistentVolumeClaim: { size: '10Gi' } }, ...extra };
}

// Scale step tests (fleet/scale*.test.ts).
export function scaleInput(o: Partial<ScaleInput>): ScaleInput {
  return {
    pool: 'runners',
    desired: 3,
    policy: 'NewestFirst',
    members: [],
    pendingCreates: [],
    leaving: new Set(),
    taken: new Set(),
    ...o,
  };
}

export const oldVm = vm(pool(), 'runners-old11', { created: at(-30 * MINUTE) });

export const midVm = vm(pool(), 'runners-mid11', { created: at(-20 * MINUTE) });

export const youngVm = vm(pool(), 'runners-yng11', { created: at(-10 * MINUTE) });

// Victim ranking tests (fleet/victims*.test.ts).
/** A member with the ranking's inputs. */
export function rankedMember(
  name: string,
  o: { ageMin?: number; cost?: string; node?: string; protect?: string; gen?: number } = {},
): VirtualMachine {
  const annotations: Record<string, string> = {};
  if (o.cost !== undefined) annotations[keys.deletionCost] = o.cost;
  if (o.protect !== undefined) annotations[keys.protected] = o.protect;
  if (o.gen !== undefined) annotations[keys.createdGeneration] = String(o.gen);
  const v = vm(pool(), name, { created: at(-(o.ageMin ?? 10) * MINUTE), annotations });
  if (o.node !== undefined) v.status = { ...v.status, nodeName: o.node };
  return v;
}

export const candidate = (vm: VirtualMachine, cost: number, crowd: number): Candidate => ({
  vm,
  cost,
  crowd,
});

/** What a generated member carries: its age in minutes and the ranking's annotations. */
export interface MemberSpec {
  readonly age: number;
  readonly gen?: number | undefined;
  readonly cost?: string | undefined;
  readonly node?: string | undefined;
  readonly protect: boolean;
}

/** Members built from generated specs, named in order. */
export function fleetOf(specs: readonly MemberSpec[]): VirtualMachine[] {
  return specs.map((s, i) =>
    rankedMember(`runners-m${String(i).padStart(2, '0')}xx`, {
      ageMin: s.age,
      ...(s.gen === undefined ? {} : { gen: s.gen }),
      ...(s.cost === undefined ? {} : { cost: s.cost }),
      ...(s.node === undefined ? {} : { node: s.node }),
      ...(s.protect ? { protect: 'true' } : {}),
    }),
  );
}

export const rankedNames = (xs: ReadonlyArray<{ vm: VirtualMachine }>) =>
  xs.map((x) => nameOf(x.vm));

// scaledownwith tests (fleet/scale-down-with*.test.ts).
export function vmsByName(...vms: VirtualMachine[]): Map<string, VirtualMachine> {
  return new Map(vms.map((v) => [v.metadata.name!, v]));
}

export function acceptedOf(r: ReturnType<typeof planScaleDownWith>): Accepted {
  if (!r.ok) throw new Error(`refused: ${r.message}`);
  return r;
}

// Status tests (plan/status*.test.ts).
export const REVISION = 'abcd1234';

export const AWAITING_RESTART_TRUE: Condition[] = [{ type: AWAITING_RESTART, status: 'True' }];

export function onRevision(
  p: VirtualMachinePool,
  name: string,
  o: Parameters<typeof vm>[2] = {},
): VirtualMachine {
  return vm(p, name, {
    ...o,
    labels: { [keys.templateHash]: REVISION, ...o.labels },
    annotations: { [keys.patchedTemplateHash]: REVISION, ...o.annotations },
  });
}

export function conditionOf(
  conds: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conds?.find((c) => c.type === type);
}

// Whole-plan tests (plan/index*.test.ts and others).
/** The actions of `kind` a plan makes, typed. */
export const actionsOf = <K extends Action['kind']>(pl: Plan, kind: K) =>
  pl.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);

/** The kinds of a plan's actions, in order. */
export const actionKinds = (pl: Plan) => pl.actions.map((a) => a.kind);

/** `NOW` shifted by `ms` milliseconds. */
export const later = (ms: number): Date => new Date(NOW.getTime() + ms);

/** The seeded randomness most plan tests use. */
export const rand42 = () => seededRandom(42);

/** Feeds a plan's status back into the pool, as the API server would store it. */
export function stored(p: VirtualMachinePool, pl: Plan): VirtualMachinePool {
  return { ...p, status: pl.status };
}

// Admission tests (admission/*.test.ts, reconcile/admission.test.ts).
/** What every AdmissionReview about the `runners` pool carries: its uid, kind, resource and name. */
export const POOL_REVIEW = {
  uid: 'u1',
  kind: { group: 'virtualization.deckhouse.io', version: 'v1alpha2', kind: 'VirtualMachinePool' },
  resource: {
    group: 'virtualization.deckhouse.io',
    version: 'v1alpha2',
    resource: 'virtualmachinepools',
  },
  namespace: 'ci',
  name: 'runners',
};

/** A CREATE of `object` (no `oldObject`) or an UPDATE from `oldObject`, by `username`. */
export function poolWrite(
  object: VirtualMachinePool,
  oldObject?: VirtualMachinePool,
  username = 'someone',
): AdmissionRequest {
  return {
    ...POOL_REVIEW,
    operation: oldObject === undefined ? 'CREATE' : 'UPDATE',
    userInfo: { username },
    object,
    ...(oldObject === undefined ? {} : { oldObject }),
  };
}
