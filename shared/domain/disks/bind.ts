/**
 * The third step of a plan: disks for every member that will exist. A new member gets its Delete
 * disks and a Retain disk per template (the recorded binding, a free disk, or a new one); a staying
 * member gets back whatever its templates lack; disks nothing needs any more are detached or deleted.
 * @module
 */
import type {
  Binding,
  BlockDeviceRef,
  DiskTemplate,
  VirtualDisk,
  VirtualMachine,
} from '../../api/index.js';
import { keys } from '../../api/index.js';
import type { ClaimDisk, CreateDisk, CreateVm, DeleteDisk, View } from '../plan/index.js';
import { asStandby, newMember, nameOf } from '../fleet/index.js';
import type { RefSlot } from './disks.js';
import {
  diskRefs,
  growthOf,
  newDisk,
  placeRef,
  policyOf,
  poolOwned,
  rankFree,
  resolveRefs,
  reusable,
  slotsOf,
  stampFree,
  withSize,
} from './disks.js';
import {
  canonicalJson,
  deleteDiskName,
  isRetainDiskName,
  retainDiskName,
} from '../formats/index.js';
import { collisionLosers } from './collisions.js';
import type { Rand } from '../formats/index.js';
import { pruneDisks } from './prune.js';

/** The disk decisions of one plan. */
export interface DiskPlan {
  /** Retain disks bound to members (recorded ones still pending first): recorded as intent. */
  readonly bindings: readonly Binding[];
  /** Free disks taken for a member (free-since cleared under their resourceVersion). */
  readonly claims: readonly ClaimDisk[];
  /** Retain disks to create before the VMs that use them. */
  readonly retainCreates: readonly CreateDisk[];
  /** New members, their disk references resolved. */
  readonly vmCreates: readonly CreateVm[];
  /** Delete disks to create after the VM that owns them. */
  readonly deleteCreates: readonly CreateDisk[];
  /** New block device references of staying members. */
  readonly refs: ReadonlyMap<string, BlockDeviceRef[]>;
  readonly diskDeletes: readonly DeleteDisk[];
  /** Disks bound in this plan (in use from now on). */
  readonly claimed: ReadonlySet<string>;
  readonly warnings: readonly string[];
}

/** What binding accumulates while it walks the members; local to {@link bindDisks}. */
interface Ledger {
  readonly bindings: Binding[];
  /** The first of `bindings` per member and template ({@link bindingKey}). */
  readonly bound: Map<string, Binding>;
  /** Members a binding was added for while walking (their slots may have changed). */
  readonly boundFor: Set<string>;
  readonly claimed: Set<string>;
  readonly claims: ClaimDisk[];
  readonly retainCreates: CreateDisk[];
  readonly deleteCreates: CreateDisk[];
  /** Free disks of each template in the order they are taken, ranked on first use. */
  readonly free: Map<string, { readonly ranked: readonly VirtualDisk[]; next: number }>;
}

const bindingKey = (vm: string, template: string): string => `${vm}\u0000${template}`;

function record(ledger: Ledger, b: Binding): void {
  ledger.bindings.push(b);
  const key = bindingKey(b.vm, b.template);
  if (!ledger.bound.has(key)) ledger.bound.set(key, b);
}

/** Who the disks are bound for: members to create, members that leave, members that stay. */
export interface Roster {
  readonly creates: readonly string[];
  readonly leaving: ReadonlySet<string>;
  readonly staying: readonly VirtualMachine[];
  /** The creates that are standby members. */
  readonly standby?: ReadonlySet<string>;
}

/** Binds disks for new and staying members (pure; `rand` names new Retain disks). */
export function bindDisks(view: View, count: Roster, rand: Rand): DiskPlan {
  const creating = new Set(count.creates);
  const bindings = view.recordedBindings.filter((b) => {
    if (creating.has(b.vm)) return true;
    const m = view.live.get(b.vm);
    return m !== undefined && !count.leaving.has(b.vm) && !diskRefs(m).includes(b.disk);
  });
  const ledger: Ledger = {
    bindings: [],
    bound: new Map(),
    boundFor: new Set(),
    claimed: new Set(bindings.map((b) => b.disk)),
    claims: [],
    retainCreates: [],
    deleteCreates: [],
    free: new Map(),
  };
  for (const b of bindings) record(ledger, b);
  const vmCreates = count.creates.map((name) => {
    const create = createMember(view, ledger, name, rand);
    return count.standby?.has(name) === true
      ? { ...create, vm: asStandby(view.pool, create.vm) }
      : create;
  });
  // Each staying member's slots, read once for the collisions and again only for a member that
  // gained a binding since (a repeat in the roster).
  const slots = count.staying.map((m) => slotsOf(view.pool, m, view.diskByName, ledger.bindings));
  ledger.boundFor.clear();
  const losers = collisionLosers(count.staying, slots);
  const refs = new Map<string, BlockDeviceRef[]>();
  count.staying.forEach((m, i) => {
    const name = nameOf(m);
    const mine = ledger.boundFor.has(name)
      ? slotsOf(view.pool, m, view.diskByName, ledger.bindings)
      : (slots[i] ?? new Map<string, RefSlot>());
    const next = ensureDisks(view, ledger, m, mine, losers.get(name) ?? new Set(), rand);
    if (next !== undefined) refs.set(name, next);
  });
  const pruned = pruneDisks(view, refs, ledger.claimed);
  return {
    bindings: ledger.bindings,
    claims: ledger.claims,
    retainCreates: ledger.retainCreates,
    vmCreates,
    deleteCreates: ledger.deleteCreates,
    refs: pruned.refs,
    diskDeletes: pruned.deletes,
    claimed: ledger.claimed,
    warnings: pruned.warnings,
  };
}

/** Disks for a VM to be created (recorded or new), then the VM itself with resolved refs. */
function createMember(view: View, ledger: Ledger, name: string, rand: Rand): CreateVm {
  const bound = new Map<string, string>();
  for (const t of view.templates) {
    if (policyOf(t) === 'Retain') {
      bound.set(t.name, bindRetain(view, ledger, name, t, rand));
      continue;
    }
    const disk = deleteDiskName(name, t.name);
    bound.set(t.name, disk);
    if (!view.diskByName.has(disk))
      ledger.deleteCreates.push({
        kind: 'createDisk',
        disk: newDisk(view.pool, t, disk, { kind: 'VirtualMachine', name }),
        ownerVm: name,
      });
  }
  const refs = resolveRefs(
    view.pool.spec.virtualMachineTemplate.spec?.blockDeviceRefs ?? [],
    bound,
  );
  return { kind: 'createVm', vm: newMember(view.pool, name, view.hash, refs) };
}

/** Every template has a disk in a staying member: the new refs, or undefined when unchanged. */
function ensureDisks(
  view: View,
  ledger: Ledger,
  m: VirtualMachine,
  slots: ReadonlyMap<string, RefSlot>,
  lost: ReadonlySet<string>,
  rand: Rand,
): BlockDeviceRef[] | undefined {
  const name = nameOf(m);
  const original = m.spec.blockDeviceRefs ?? [];
  let refs = original;
  for (const t of view.templates) {
    const slot = slots.get(t.name);
    if (slot !== undefined && !slot.placeholder && !lost.has(slot.disk)) {
      if (!view.diskByName.has(slot.disk)) recreate(view, ledger, m, t, slot.disk);
      continue;
    }
    let disk: string;
    if (policyOf(t) === 'Delete') {
      disk = deleteDiskName(name, t.name);
      if (!view.diskByName.has(disk)) recreate(view, ledger, m, t, disk);
    } else {
      disk = bindRetain(view, ledger, name, t, rand);
    }
    refs = placeRef(refs, disk, slot);
  }
  // Untouched refs are unchanged; placed ones are compared as the API server would store them.
  return refs === original || canonicalJson(refs) === canonicalJson(original) ? undefined : refs;
}

/** The Retain disk for (vm, template): the recorded binding, a free disk, or a new one. */
function bindRetain(view: View, ledger: Ledger, vm: string, t: DiskTemplate, rand: Rand): string {
  const recorded = ledger.bound.get(bindingKey(vm, t.name));
  if (recorded !== undefined) {
    const disk = view.diskByName.get(recorded.disk);
    if (disk === undefined) createRetain(view, ledger, recorded.disk, t);
    else if (disk.metadata.annotations?.[keys.freeSince] !== undefined)
      claim(view, ledger, disk, vm);
    return recorded.disk;
  }
  const free = takeFree(view, ledger, t.name);
  let name: string;
  if (free !== undefined) {
    name = nameOf(free);
    claim(view, ledger, free, vm);
  } else {
    name = retainDiskName(nameOf(view.pool), t.name, rand);
    for (let i = 0; (view.diskByName.has(name) || ledger.claimed.has(name)) && i < 32; i++)
      name = retainDiskName(nameOf(view.pool), t.name, rand);
    createRetain(view, ledger, name, t);
  }
  ledger.claimed.add(name);
  record(ledger, { vm, template: t.name, disk: name });
  ledger.boundFor.add(vm);
  return name;
}

/**
 * The best free disk of a template not claimed yet ({@link rankFree}'s order), never one in use (a
 * VM outside the pool or a Terminating member references it, or the platform reports it attached):
 * the pool's disks of
 * the template are ranked once per plan, and since claims only accumulate, each is skipped at most once.
 */
function takeFree(view: View, ledger: Ledger, template: string): VirtualDisk | undefined {
  let free = ledger.free.get(template);
  if (free === undefined) {
    const candidates = view.disks.filter(
      (d) =>
        poolOwned(view.pool, d) &&
        d.metadata.labels?.[keys.diskTemplate] === template &&
        reusable(d) &&
        !view.busy.has(nameOf(d)),
    );
    free = { ranked: rankFree(candidates), next: 0 };
    ledger.free.set(template, free);
  }
  for (; free.next < free.ranked.length; free.next++) {
    const d = free.ranked[free.next] as VirtualDisk;
    if (!ledger.claimed.has(nameOf(d))) return d;
  }
  return undefined;
}

/** A disk a staying member references but that is gone: make it again under the same name. */
function recreate(view: View, ledger: Ledger, m: VirtualMachine, t: DiskTemplate, disk: string) {
  const name = nameOf(m);
  if (policyOf(t) === 'Delete' && disk === deleteDiskName(name, t.name)) {
    const owner = { kind: 'VirtualMachine', name, uid: m.metadata.uid ?? '' } as const;
    ledger.deleteCreates.push({ kind: 'createDisk', disk: newDisk(view.pool, t, disk, owner) });
  } else if (isRetainDiskName(disk, nameOf(view.pool), t.name) && !ledger.claimed.has(disk)) {
    ledger.claimed.add(disk);
    createRetain(view, ledger, disk, t);
  }
}

function createRetain(view: View, ledger: Ledger, name: string, t: DiskTemplate): void {
  const owner = {
    kind: 'VirtualMachinePool',
    name: nameOf(view.pool),
    uid: view.pool.metadata.uid ?? '',
  } as const;
  ledger.retainCreates.push({ kind: 'createDisk', disk: newDisk(view.pool, t, name, owner) });
}

/**
 * Takes a free disk: free-since cleared (under its resourceVersion, so a racing GC delete fails) and,
 * like any disk of the pool, grown to its template's size in the same write.
 */
function claim(view: View, ledger: Ledger, disk: VirtualDisk, vm: string): void {
  const own = view.poolDisk.get(nameOf(disk));
  const size = own?.template === undefined ? undefined : growthOf(own.template, disk);
  const next = stampFree(disk, undefined);
  ledger.claims.push(
    size === undefined
      ? { kind: 'claimDisk', disk: next, forVm: vm }
      : { kind: 'claimDisk', disk: withSize(next, size), forVm: vm, grownTo: size },
  );
}
