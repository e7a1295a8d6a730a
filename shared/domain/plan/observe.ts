/**
 * The plan's first step: what a reconcile read, sorted into members, the intent still pending and
 * disks by the role they play. Everything later steps need to look up is indexed here, once.
 * @module
 */
import type {
  Binding,
  DiskTemplate,
  RecordedTarget,
  VirtualDisk,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../../api/index.js';
import { keys } from '../../api/index.js';
import { templateHash } from '../formats/index.js';
import type { TakenNames } from '../fleet/index.js';
import {
  isStandby,
  isMember,
  isTerminating,
  nameOf,
  CREATE_BURST,
  recordedTargets,
  isKept,
} from '../fleet/index.js';
import { attached, isPoolDisk } from '../disks/index.js';

/**
 * What a reconcile read: the pool and every VM and disk carrying its pool-uid label; `vms` may also
 * hold the namespace's other VMs (the disks they reference are in use, see in-use.ts).
 */
export interface Observed {
  readonly pool: VirtualMachinePool;
  readonly vms: readonly VirtualMachine[];
  readonly disks: readonly VirtualDisk[];
  /**
   * Names a create found taken by a VM that is not the pool's (AlreadyExists): no longer pending,
   * and not chosen again.
   */
  readonly foreign?: ReadonlySet<string>;
  /** Most creates one pass may record (default {@link CREATE_BURST}; tests make it small). */
  readonly burst?: number;
  /** The claims of the pool's namespace (those naming other pools are ignored). */
  readonly claims?: readonly VirtualMachineClaim[];
  /** Uids of the namespace's claims that do not parse: their members are left as they are. */
  readonly unreadableClaims?: readonly string[];
}

/** A member named together with the uid it had when recorded, so a same-named newcomer is safe. */
export type MemberRef = RecordedTarget;

/** A member recorded to be deleted and replaced, and why. */
export interface Replacement extends MemberRef {
  readonly reason: 'Unhealthy' | 'Expired';
}

/** A disk labelled for the pool and the template its label names (undefined: a removed template). */
export interface PoolDisk {
  readonly disk: VirtualDisk;
  readonly template?: DiskTemplate;
}

/** The observation, indexed: the input of every later step. */
export interface View {
  readonly pool: VirtualMachinePool;
  /** Revision of the VM template (computed once per plan). */
  readonly hash: string;
  readonly templates: readonly DiskTemplate[];
  /** Members (Terminating included) and the live ones among them, by name. */
  readonly members: readonly VirtualMachine[];
  readonly live: ReadonlyMap<string, VirtualMachine>;
  readonly disks: readonly VirtualDisk[];
  readonly diskByName: ReadonlyMap<string, VirtualDisk>;
  /** The pool's own disks (by label), not Terminating, with the template their label names. */
  readonly poolDisks: readonly PoolDisk[];
  /** Disks only a Terminating member still references (free soon). */
  readonly heldByLeaving: ReadonlySet<string>;
  /**
   * Disks in use (L3), never bound to a member, stamped free, pruned or collected: referenced by a
   * live or Terminating member or by any other VM read, or reported attached by the platform.
   */
  readonly busy: ReadonlySet<string>;
  /**
   * Disks a live member references that a live member or a VM outside the pool read before it (or
   * the same member, twice) referenced already: every disk two staying members share is here
   * (collisions.ts), and more does no harm; empty in a healthy pool.
   */
  readonly sharedRefs: ReadonlySet<string>;
  /** Recorded creates not yet observed, minus those a VM outside the pool turned out to hold. */
  readonly pendingCreates: readonly string[];
  /** Recorded victims of scale-downs still live under the recorded uid and not protected since. */
  readonly pendingDeletes: readonly MemberRef[];
  /** Recorded replacements (healing, lifetime) still live under the recorded uid, not protected. */
  readonly pendingReplacements: readonly Replacement[];
  /** Recorded promotions of standby members not carried out yet (the label still on). */
  readonly pendingPromotions: readonly MemberRef[];
  /** Recorded returns to the standby not carried out yet (the label not on yet). */
  readonly pendingReturns: readonly MemberRef[];
  /** Pending creates recorded as standby members. */
  readonly standbyCreates: ReadonlySet<string>;
  /** Recorded bindings, as stored. */
  readonly recordedBindings: readonly Binding[];
  /** Names a binding was recorded for: such a pending create is never dropped. */
  readonly bound: ReadonlySet<string>;
  /** scaledownwith targets recorded on the pool, and those still live. */
  readonly targets: readonly RecordedTarget[];
  readonly liveTargets: readonly RecordedTarget[];
  /** Most pending creates one pass records. */
  readonly burst: number;
  /** Every VM name seen, pending creates and foreign-held names: never chosen for a new VM. */
  readonly taken: TakenNames;
  readonly warnings: readonly string[];
}

/** Indexes an observation (pure; one pass over the VMs and one over the disks). */
export function observe(obs: Observed): View {
  const { pool } = obs;
  const targets = recordedTargets(pool);
  const members: VirtualMachine[] = [];
  const live = new Map<string, VirtualMachine>();
  const heldByTerminating = new Set<string>();
  const busy = new Set<string>();
  const sharedRefs = new Set<string>();
  // The names of the VMs read that are not live members, labelled for the pool or not (those are
  // read with the namespace: taken, never the pool's). Few in a settled pool: a name is looked up in
  // `live` and then in these, rather than in one more index of every VM.
  const labelledOthers = new Set<string>();
  const outside = new Set<string>();
  for (const vm of obs.vms) {
    const name = nameOf(vm);
    if (!isMember(pool, vm)) {
      const labelled = vm.metadata.labels?.[keys.poolUid] === pool.metadata.uid;
      (labelled ? labelledOthers : outside).add(name);
      for (const r of vm.spec.blockDeviceRefs ?? []) if (r.kind === 'VirtualDisk') busy.add(r.name);
      continue;
    }
    members.push(vm);
    const terminating = isTerminating(vm);
    if (terminating) labelledOthers.add(name);
    else live.set(name, vm);
    // A live member's disks go straight into busy: no index of their own (nothing reads one).
    for (const r of vm.spec.blockDeviceRefs ?? []) {
      if (r.kind !== 'VirtualDisk') continue;
      if (terminating) heldByTerminating.add(r.name);
      else if (busy.has(r.name)) sharedRefs.add(r.name);
      else busy.add(r.name);
    }
  }
  const isLive = (r: MemberRef): boolean => live.get(r.name)?.metadata.uid === r.uid;
  // Protection (or a claim) wins over a recorded removal not carried out yet (a runner that took a
  // job after the decision): the victim is chosen again among the others, the replacement is dropped.
  const mayGo = (r: MemberRef): boolean => {
    const m = live.get(r.name);
    return m?.metadata.uid === r.uid && !isKept(m);
  };

  const intent = pool.status?.intent ?? {};
  const foreign = obs.foreign ?? new Set<string>();
  const pendingCreates: string[] = [];
  const warnings: string[] = [];
  const labelledName = (n: string): boolean => live.has(n) || labelledOthers.has(n);
  for (const n of intent.creates ?? []) {
    if (labelledName(n)) continue;
    if (!foreign.has(n) && !outside.has(n)) pendingCreates.push(n);
    else warnings.push(`VirtualMachine ${n} exists and is not the pool's: creating another name`);
  }

  const pending = new Set(pendingCreates);
  // Every name seen is taken, and so are the pending and foreign ones.
  const taken: TakenNames = {
    has: (n) => labelledName(n) || outside.has(n) || pending.has(n) || foreign.has(n),
  };
  const templates = pool.spec.virtualDiskTemplates;
  const templateByName = new Map(templates.map((t) => [t.name, t]));
  const diskByName = new Map<string, VirtualDisk>();
  const poolDisks: PoolDisk[] = [];
  for (const disk of obs.disks) {
    const name = nameOf(disk);
    diskByName.set(name, disk);
    if (attached(disk)) busy.add(name);
    const labels = disk.metadata.labels;
    if (!isPoolDisk(pool, disk)) continue;
    const template = templateByName.get(labels?.[keys.diskTemplate] ?? '');
    const own: PoolDisk = template === undefined ? { disk } : { disk, template };
    poolDisks.push(own);
  }

  // Grown in place (no copy per plan); live members' disks are in it already.
  for (const n of heldByTerminating) busy.add(n);
  return {
    pool,
    hash: templateHash(pool.spec.virtualMachineTemplate),
    templates,
    members,
    live,
    disks: obs.disks,
    diskByName,
    poolDisks,
    heldByLeaving: heldByTerminating,
    busy,
    sharedRefs,
    pendingCreates,
    pendingDeletes: (intent.deletes ?? []).filter((d) => d.reason === undefined && mayGo(d)),
    pendingReplacements: (intent.deletes ?? []).filter(
      (d): d is Replacement => d.reason !== undefined && mayGo(d),
    ),
    pendingPromotions: (intent.promotions ?? []).filter(
      (r) => isLive(r) && isStandby(live.get(r.name) as VirtualMachine),
    ),
    pendingReturns: (intent.returns ?? []).filter(
      (r) => isLive(r) && !isStandby(live.get(r.name) as VirtualMachine),
    ),
    standbyCreates: new Set((intent.standbyCreates ?? []).filter((n) => pending.has(n))),
    recordedBindings: intent.bindings ?? [],
    bound: new Set((intent.bindings ?? []).map((b) => b.vm)),
    targets,
    liveTargets: targets.filter(isLive),
    burst: obs.burst ?? CREATE_BURST,
    taken,
    warnings,
  };
}
