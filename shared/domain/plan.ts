/**
 * `plan(observed, now, rand)`: everything a reconcile decides for one pool, as ordered actions plus
 * the new status carrying the intent to record before any of them runs.
 * @module
 */
import type {
  Binding,
  BlockDeviceRef,
  DiskTemplate,
  PoolStatus,
  VirtualDisk,
  VirtualMachine,
  VirtualMachinePool,
} from '../api/index.js';
import { API_VERSION, BLOCK_DEVICES_READY, keys } from '../api/index.js';
import type { Action, DiskUpdateWhy, VmUpdateWhy } from './actions.js';
import { isFenced } from './actions.js';
import {
  chooseFree,
  diskRefs,
  diskSize,
  newDisk,
  placeRef,
  policyOf,
  poolOwned,
  resolveRefs,
  reusable,
  slotsOf,
} from './disks.js';
import { canonicalJson, templateHash } from './hash.js';
import { conditionOf, isTerminating, membersOf, nameOf } from './membership.js';
import type { Rand } from './names.js';
import { deleteDiskName, isRetainDiskName, retainDiskName } from './names.js';
import { quantityValue } from './quantity.js';
import { decideScale } from './scale.js';
import { computeStatus, rfc3339, sameStatus } from './status.js';
import { advance, patchToTemplate, rolloutStep } from './rollout.js';
import { recordedTargets } from './targets.js';

/** What a reconcile read: the pool and every VM and disk carrying its pool-uid label. */
export interface Observed {
  readonly pool: VirtualMachinePool;
  readonly vms: readonly VirtualMachine[];
  readonly disks: readonly VirtualDisk[];
  /**
   * Names a create found taken by a VM that is not the pool's (AlreadyExists): no longer pending,
   * and not chosen again.
   */
  readonly foreign?: ReadonlySet<string>;
}

/** What a reconcile should do. */
export interface Plan {
  /** Side effects in execution order. */
  readonly actions: Action[];
  /** The status to store, intent included. */
  readonly status: PoolStatus;
  /** The status differs from the stored one. */
  readonly writeStatus: boolean;
  /** Some action creates or deletes: the status (intent) write conditioned on the pool's
   * resourceVersion must succeed before any action runs. */
  readonly fenced: boolean;
  /** Things a human should know (a boot disk of a removed template kept, a foreign disk). */
  readonly warnings: string[];
}

/** A fresh VM for the pool with its disks already resolved, on revision `hash`. */
export function newMember(
  pool: VirtualMachinePool,
  name: string,
  hash: string,
  refs: BlockDeviceRef[],
): VirtualMachine {
  const t = pool.spec.virtualMachineTemplate;
  return {
    apiVersion: API_VERSION,
    kind: 'VirtualMachine',
    metadata: {
      name,
      namespace: pool.metadata.namespace,
      labels: {
        ...t.metadata?.labels,
        [keys.poolUid]: pool.metadata.uid ?? '',
        [keys.pool]: nameOf(pool),
        [keys.templateHash]: hash,
      },
      // Recording the patched revision at birth spares every new replica a redundant rewrite.
      annotations: {
        ...t.metadata?.annotations,
        [keys.patchedTemplateHash]: hash,
        [keys.createdGeneration]: String(pool.metadata.generation ?? 0),
      },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: 'VirtualMachinePool',
          name: nameOf(pool),
          uid: pool.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { ...structuredClone(t.spec ?? {}), blockDeviceRefs: refs },
  };
}

/** Plans one reconcile of a pool. Pure: `now` and `rand` are the only outside inputs. */
export function plan(obs: Observed, now: Date, rand: Rand): Plan {
  const { pool } = obs;
  if (pool.metadata.deletionTimestamp !== undefined) {
    // Kubernetes' garbage collector removes members and pool disks; acting now would only race it.
    return {
      actions: [],
      status: pool.status ?? {},
      writeStatus: false,
      fenced: false,
      warnings: [],
    };
  }
  return new Planner(obs, now, rand).run();
}

class Planner {
  private readonly pool: VirtualMachinePool;
  private readonly hash: string;
  private readonly templates: readonly DiskTemplate[];
  private readonly templateRefs: readonly BlockDeviceRef[];
  private readonly members: VirtualMachine[];
  private readonly live: VirtualMachine[];
  private readonly diskByName: Map<string, VirtualDisk>;
  private readonly liveRefs = new Set<string>();
  private readonly heldByLeaving = new Set<string>();
  private readonly claimed = new Set<string>();
  private bindings: Binding[] = [];
  private readonly claims: Action[] = [];
  private readonly diskCreates: Action[] = [];
  private readonly vmCreates: Action[] = [];
  private readonly lateDiskCreates: Action[] = [];
  private readonly vmDeletes: Action[] = [];
  private readonly diskDeletes: Action[] = [];
  private readonly refEdits = new Map<string, BlockDeviceRef[]>();
  private readonly diskEdits = new Map<string, { disk: VirtualDisk; why: Set<DiskUpdateWhy> }>();
  private readonly warnings: string[] = [];
  private readonly obs: Observed;
  private readonly now: Date;
  private readonly rand: Rand;

  constructor(obs: Observed, now: Date, rand: Rand) {
    this.obs = obs;
    this.now = now;
    this.rand = rand;
    this.pool = obs.pool;
    this.hash = templateHash(this.pool.spec.virtualMachineTemplate);
    this.templates = this.pool.spec.virtualDiskTemplates;
    this.templateRefs = this.pool.spec.virtualMachineTemplate.spec?.blockDeviceRefs ?? [];
    this.members = membersOf(this.pool, obs.vms);
    this.live = this.members.filter((m) => !isTerminating(m));
    this.diskByName = new Map(obs.disks.map((d) => [nameOf(d), d]));
    for (const m of this.live) for (const d of diskRefs(m)) this.liveRefs.add(d);
    for (const m of this.members)
      if (isTerminating(m)) for (const d of diskRefs(m)) this.heldByLeaving.add(d);
  }

  run(): Plan {
    const intent = this.pool.status?.intent ?? {};
    const vmNames = new Set(this.obs.vms.map(nameOf));
    const liveByName = new Map(this.live.map((m) => [nameOf(m), m]));
    const isLive = (name: string, uid: string): boolean =>
      liveByName.get(name)?.metadata.uid === uid;

    const foreign = this.obs.foreign ?? new Set<string>();
    const pendingCreates: string[] = [];
    for (const n of intent.creates ?? []) {
      if (vmNames.has(n)) continue;
      if (!foreign.has(n)) pendingCreates.push(n);
      else
        this.warnings.push(
          `VirtualMachine ${n} exists and is not the pool's: creating another name`,
        );
    }
    const pendingDeletes = (intent.deletes ?? []).filter((d) => isLive(d.name, d.uid));
    const targets = recordedTargets(this.pool);
    const liveTargets = targets.filter((t) => isLive(t.name, t.uid));
    const leaving = new Set([...pendingDeletes, ...liveTargets].map((d) => d.name));

    const decision = decideScale(
      {
        pool: nameOf(this.pool),
        desired: this.pool.spec.replicas ?? 0,
        policy: this.pool.spec.scaleDownPolicy,
        members: this.members,
        pendingCreates,
        leaving,
        taken: new Set([...vmNames, ...pendingCreates, ...foreign]),
      },
      this.rand,
    );
    const creates = [...pendingCreates, ...decision.creates];
    const victims = [
      ...pendingDeletes,
      ...decision.victims.map((v) => ({ name: nameOf(v), uid: v.metadata.uid ?? '' })),
    ];
    for (const v of victims) leaving.add(v.name);

    const createSet = new Set(creates);
    this.bindings = (intent.bindings ?? []).filter((b) => {
      if (createSet.has(b.vm)) return true;
      const m = liveByName.get(b.vm);
      return m !== undefined && !leaving.has(b.vm) && !diskRefs(m).includes(b.disk);
    });
    for (const b of this.bindings) this.claimed.add(b.disk);

    for (const name of creates) this.planCreate(name);
    const staying = this.live.filter((m) => !leaving.has(nameOf(m)));
    const losers = this.collisionLosers(staying);
    for (const m of staying) this.ensureDisks(m, losers.get(nameOf(m)) ?? new Set());
    this.pruneDisks();
    this.markAndGrow();

    for (const v of victims)
      this.vmDeletes.push({ kind: 'deleteVm', name: v.name, uid: v.uid, why: 'scaleDown' });
    for (const t of liveTargets)
      if (!victims.some((v) => v.name === t.name))
        this.vmDeletes.push({ kind: 'deleteVm', name: t.name, uid: t.uid, why: 'target' });

    const actions: Action[] = [
      ...this.claims,
      ...this.diskCreates,
      ...this.vmCreates,
      ...this.lateDiskCreates,
      ...this.vmUpdates(staying),
      ...this.vmDeletes,
      ...[...this.diskEdits.values()].map((e): Action => ({
        kind: 'updateDisk',
        disk: e.disk,
        why: [...e.why],
      })),
      ...this.diskDeletes,
    ];
    if (liveTargets.length !== targets.length)
      actions.push({
        kind: 'dropTargets',
        names: targets.filter((t) => !liveTargets.includes(t)).map((t) => t.name),
      });

    const status = computeStatus(
      this.pool,
      this.members,
      this.hash,
      { creates, deletes: victims, bindings: this.bindings },
      this.now,
    );
    return {
      actions,
      status,
      writeStatus: !sameStatus(status, this.pool.status),
      fenced: actions.some(isFenced),
      warnings: this.warnings,
    };
  }

  /** Disks for a VM to be created (recorded or new), then the VM itself with resolved refs. */
  private planCreate(name: string): void {
    const bound = new Map<string, string>();
    for (const t of this.templates) {
      if (policyOf(t) === 'Delete') {
        const disk = deleteDiskName(name, t.name);
        bound.set(t.name, disk);
        if (!this.diskByName.has(disk))
          this.lateDiskCreates.push({
            kind: 'createDisk',
            disk: newDisk(this.pool, t, disk, { kind: 'VirtualMachine', name }),
            ownerVm: name,
          });
      } else {
        bound.set(t.name, this.bindRetain(name, t));
      }
    }
    const refs = resolveRefs(this.templateRefs, bound);
    this.vmCreates.push({ kind: 'createVm', vm: newMember(this.pool, name, this.hash, refs) });
  }

  /** The Retain disk for (vm, template): the recorded binding, a free disk, or a new one. */
  private bindRetain(vm: string, t: DiskTemplate): string {
    const recorded = this.bindings.find((b) => b.vm === vm && b.template === t.name);
    if (recorded !== undefined) {
      const disk = this.diskByName.get(recorded.disk);
      if (disk === undefined) this.createRetain(recorded.disk, t);
      else if (disk.metadata.annotations?.[keys.freeSince] !== undefined) this.claim(disk, vm);
      return recorded.disk;
    }
    const free = chooseFree(
      this.obs.disks.filter(
        (d) =>
          poolOwned(this.pool, d) &&
          d.metadata.labels?.[keys.diskTemplate] === t.name &&
          reusable(d) &&
          !this.liveRefs.has(nameOf(d)) &&
          !this.claimed.has(nameOf(d)),
      ),
      this.heldByLeaving,
    );
    let name: string;
    if (free !== undefined) {
      name = nameOf(free);
      this.claim(free, vm);
    } else {
      name = retainDiskName(nameOf(this.pool), t.name, this.rand);
      for (let i = 0; (this.diskByName.has(name) || this.claimed.has(name)) && i < 32; i++)
        name = retainDiskName(nameOf(this.pool), t.name, this.rand);
      this.createRetain(name, t);
    }
    this.claimed.add(name);
    this.bindings.push({ vm, template: t.name, disk: name });
    return name;
  }

  private createRetain(name: string, t: DiskTemplate): void {
    const owner = { kind: 'VirtualMachinePool', name: nameOf(this.pool) } as const;
    const disk = newDisk(this.pool, t, name, { ...owner, uid: this.pool.metadata.uid ?? '' });
    this.diskCreates.push({ kind: 'createDisk', disk });
  }

  private claim(disk: VirtualDisk, vm: string): void {
    const next = this.editDisk(disk, 'claim');
    const annotations = { ...next.metadata.annotations };
    delete annotations[keys.freeSince];
    next.metadata.annotations = annotations;
    this.diskEdits.delete(nameOf(disk));
    this.claims.push({ kind: 'claimDisk', disk: next, forVm: vm });
  }

  private editDisk(disk: VirtualDisk, why: DiskUpdateWhy): VirtualDisk {
    const name = nameOf(disk);
    let e = this.diskEdits.get(name);
    if (e === undefined) {
      e = { disk: structuredClone(disk), why: new Set() };
      this.diskEdits.set(name, e);
    }
    e.why.add(why);
    return e.disk;
  }

  /**
   * A Retain disk referenced by two staying members stays with one (BlockDevicesReady first, then by
   * name); the others get another disk in the same slot.
   */
  private collisionLosers(staying: readonly VirtualMachine[]): Map<string, Set<string>> {
    const holders = new Map<string, VirtualMachine[]>();
    for (const m of staying)
      for (const slot of slotsOf(this.pool, m, this.diskByName, this.bindings).values())
        if (!slot.placeholder) holders.set(slot.disk, [...(holders.get(slot.disk) ?? []), m]);
    const losers = new Map<string, Set<string>>();
    for (const [disk, ms] of holders) {
      if (ms.length < 2) continue;
      const ready = (m: VirtualMachine): number =>
        conditionOf(m, BLOCK_DEVICES_READY)?.status === 'True' ? 0 : 1;
      const sorted = [...ms].sort(
        (a, b) => ready(a) - ready(b) || (nameOf(a) < nameOf(b) ? -1 : 1),
      );
      for (const m of sorted.slice(1))
        losers.set(nameOf(m), new Set([...(losers.get(nameOf(m)) ?? []), disk]));
    }
    return losers;
  }

  /** Every current template has a disk in a staying member: resolve, recreate or bind one. */
  private ensureDisks(m: VirtualMachine, lost: ReadonlySet<string>): void {
    const name = nameOf(m);
    const slots = slotsOf(this.pool, m, this.diskByName, this.bindings);
    let refs = m.spec.blockDeviceRefs ?? [];
    for (const t of this.templates) {
      const slot = slots.get(t.name);
      if (slot !== undefined && !slot.placeholder && !lost.has(slot.disk)) {
        if (!this.diskByName.has(slot.disk)) this.recreate(m, t, slot.disk);
        continue;
      }
      let disk: string;
      if (policyOf(t) === 'Delete') {
        disk = deleteDiskName(name, t.name);
        if (!this.diskByName.has(disk)) this.recreate(m, t, disk);
      } else {
        disk = this.bindRetain(name, t);
      }
      refs = placeRef(refs, disk, slot);
    }
    if (canonicalJson(refs) !== canonicalJson(m.spec.blockDeviceRefs ?? []))
      this.refEdits.set(name, refs);
  }

  /** A disk a staying member references but that is gone: make it again under the same name. */
  private recreate(m: VirtualMachine, t: DiskTemplate, disk: string): void {
    const name = nameOf(m);
    if (policyOf(t) === 'Delete' && disk === deleteDiskName(name, t.name)) {
      const owner = { kind: 'VirtualMachine', name, uid: m.metadata.uid ?? '' } as const;
      this.lateDiskCreates.push({ kind: 'createDisk', disk: newDisk(this.pool, t, disk, owner) });
    } else if (isRetainDiskName(disk, nameOf(this.pool), t.name) && !this.claimed.has(disk)) {
      this.claimed.add(disk);
      this.createRetain(disk, t);
    }
  }

  /** Disks of removed templates (detached, then deleted) and pool-owned disks under Delete. */
  private pruneDisks(): void {
    for (const d of this.obs.disks) {
      if (isTerminating(d) || d.metadata.labels?.[keys.poolUid] !== this.pool.metadata.uid)
        continue;
      const name = nameOf(d);
      const t = this.templates.find((x) => x.name === d.metadata.labels?.[keys.diskTemplate]);
      const del = (why: 'removedTemplate' | 'deletePolicy'): void => {
        this.diskDeletes.push({
          kind: 'deleteDisk',
          name,
          uid: d.metadata.uid ?? '',
          resourceVersion: d.metadata.resourceVersion ?? '',
          why,
        });
      };
      if (t === undefined) {
        let referenced = false;
        for (const m of this.live) {
          const refs = this.refEdits.get(nameOf(m)) ?? m.spec.blockDeviceRefs ?? [];
          const i = refs.findIndex((r) => r.kind === 'VirtualDisk' && r.name === name);
          if (i < 0) continue;
          referenced = true;
          if (i === 0) {
            this.warnings.push(
              `VirtualDisk "${name}" of a removed template is the boot disk of "${nameOf(m)}" and stays until that replica is recreated`,
            );
          } else {
            this.refEdits.set(
              nameOf(m),
              refs.filter((_, j) => j !== i),
            );
          }
        }
        if (!referenced) del('removedTemplate');
      } else if (
        policyOf(t) === 'Delete' &&
        poolOwned(this.pool, d) &&
        !this.liveRefs.has(name) &&
        !this.heldByLeaving.has(name) &&
        !this.claimed.has(name)
      ) {
        del('deletePolicy');
      }
    }
  }

  /** free-since stamped on free Retain disks and cleared on used ones; sizes grown to the template. */
  private markAndGrow(): void {
    for (const d of this.obs.disks) {
      if (isTerminating(d) || d.metadata.labels?.[keys.poolUid] !== this.pool.metadata.uid)
        continue;
      const name = nameOf(d);
      const t = this.templates.find((x) => x.name === d.metadata.labels?.[keys.diskTemplate]);
      if (t === undefined) continue;
      const claim = this.claims.find((c) => c.kind === 'claimDisk' && nameOf(c.disk) === name);
      const target = claim?.kind === 'claimDisk' ? claim.disk : undefined;
      const claimedNow = target !== undefined;
      if (policyOf(t) === 'Retain' && poolOwned(this.pool, d) && !claimedNow) {
        const inUse = this.liveRefs.has(name) || this.claimed.has(name);
        const stamped = d.metadata.annotations?.[keys.freeSince] !== undefined;
        if (inUse && stamped) {
          const next = this.editDisk(d, 'inUse');
          const annotations = { ...next.metadata.annotations };
          delete annotations[keys.freeSince];
          next.metadata.annotations = annotations;
        } else if (!inUse && !stamped) {
          const next = this.editDisk(d, 'freeSince');
          next.metadata.annotations = {
            ...next.metadata.annotations,
            [keys.freeSince]: rfc3339(this.now),
          };
        }
      }
      const want = t.spec.persistentVolumeClaim?.size;
      const wantBytes = quantityValue(want);
      const have = diskSize(d);
      if (
        want !== undefined &&
        wantBytes !== undefined &&
        (have === undefined || have < wantBytes)
      ) {
        const next = target ?? this.editDisk(d, 'grow');
        next.spec = {
          ...next.spec,
          persistentVolumeClaim: { ...next.spec.persistentVolumeClaim, size: want },
        };
      }
    }
  }

  /** One update per member: rollout patch or label advance, plus disk reference edits. */
  private vmUpdates(staying: readonly VirtualMachine[]): Action[] {
    const out: Action[] = [];
    const template = this.pool.spec.virtualMachineTemplate;
    for (const m of staying) {
      const why: VmUpdateWhy[] = [];
      let next = m;
      const refs = this.refEdits.get(nameOf(m));
      if (refs !== undefined) {
        const attached = refs.length >= (m.spec.blockDeviceRefs ?? []).length;
        why.push(attached ? 'attach' : 'detach');
        next = { ...next, spec: { ...next.spec, blockDeviceRefs: refs } };
      }
      const step = rolloutStep(m, this.hash);
      if (step === 'patch') {
        why.push('rollout');
        next = patchToTemplate(next, template, this.hash);
      } else if (step === 'advance' && refs === undefined) {
        why.push('advance');
        next = advance(next, this.hash);
      }
      if (why.length > 0) out.push({ kind: 'updateVm', vm: next, why });
    }
    return out;
  }
}
