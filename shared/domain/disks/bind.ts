/**
 * A plan step after the leavers and the standby are known: disks for every member that will exist.
 * A new member gets its Delete disks and a Retain disk per template (the recorded binding, a free
 * disk, or a new one); a staying member gets back whatever its templates lack; disks nothing needs
 * any more are detached or deleted.
 * @module
 */
import type { Binding, BlockDeviceRef, DiskTemplate, VirtualMachine } from '../../api/index.js';
import type { ClaimDisk, CreateDisk, CreateVm, DeleteDisk, View } from '../plan/index.js';
import { asStandby, newMember, nameOf } from '../fleet/index.js';
import type { Slots } from './disks.js';
import {
  diskRefs,
  newDisk,
  placeRef,
  policyOf,
  resolveRefs,
  slotOf,
  slotsOf,
  templateBits,
  whole,
} from './disks.js';
import { canonicalJson, deleteDiskName, isRetainDiskName } from '../formats/index.js';
import { collisionLosers } from './collisions.js';
import type { Rand } from '../formats/index.js';
import type { PruneInput } from './prune.js';
import { pruneDisks } from './prune.js';
import type { Ledger, RetainInput } from './retain.js';
import { bindRetain, createRetain, record } from './retain.js';

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

/** Who the disks are bound for: members to create, members that leave, members that stay. */
export interface Roster {
  readonly creates: readonly string[];
  readonly leaving: ReadonlySet<string>;
  readonly staying: readonly VirtualMachine[];
  /** The creates that are standby members. */
  readonly standby?: ReadonlySet<string>;
}

/** What binding reads of the view. */
type BindView = RetainInput &
  PruneInput &
  Pick<View, 'hash' | 'templates' | 'live' | 'diskByName' | 'recordedBindings' | 'sharedRefs'>;

// Shared by every member that loses no disk (most of them): nothing allocated per member.
const NOTHING_LOST: ReadonlySet<string> = new Set();
const NO_LOSERS: ReadonlyMap<string, ReadonlySet<string>> = new Map();

/** What the bind step reads. */
export interface BindInput extends BindView {
  readonly roster: Roster;
  /** Names new Retain disks. */
  readonly rand: Rand;
}

/** Binds disks for new and staying members (pure). */
export function bindDisks(input: Readonly<BindInput>): DiskPlan {
  const view = input;
  const { roster: count, rand } = input;
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
  const slotsFor = (m: VirtualMachine): Slots =>
    slotsOf(view.pool, m, view.diskByName, ledger.bindings);
  // Where observe saw a disk shared, every staying member's slots are read up front for the
  // collisions, and again only for a member that gained a binding since. Otherwise (a healthy pool)
  // each member's are read as it is ensured, and dropped: no plan holds every member's slots at
  // once. The staying members are distinct (plan's roster never repeats one): a member listed
  // twice would not collide with itself here.
  const early = view.sharedRefs.size === 0 ? undefined : count.staying.map(slotsFor);
  ledger.boundFor.clear();
  const losers =
    early === undefined ? NO_LOSERS : collisionLosers(count.staying, early, view.sharedRefs);
  const refs = new Map<string, BlockDeviceRef[]>();
  const bits = templateBits(view.templates);
  count.staying.forEach((m, i) => {
    const name = nameOf(m);
    const lost = losers.get(name);
    if (lost === undefined && bits !== undefined && whole(view.pool, m, view.diskByName, bits))
      return;
    const mine = early === undefined || ledger.boundFor.has(name) ? slotsFor(m) : early[i];
    const next = ensureDisks(view, ledger, m, mine ?? [], lost ?? NOTHING_LOST, rand);
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
function createMember(view: BindView, ledger: Ledger, name: string, rand: Rand): CreateVm {
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
  view: BindView,
  ledger: Ledger,
  m: VirtualMachine,
  slots: Slots,
  lost: ReadonlySet<string>,
  rand: Rand,
): BlockDeviceRef[] | undefined {
  const name = nameOf(m);
  const original = m.spec.blockDeviceRefs ?? [];
  let refs = original;
  for (const t of view.templates) {
    const slot = slotOf(slots, t.name);
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

/** A disk a staying member references but that is gone: make it again under the same name. */
function recreate(
  view: BindView,
  ledger: Ledger,
  m: VirtualMachine,
  t: DiskTemplate,
  disk: string,
) {
  const name = nameOf(m);
  if (policyOf(t) === 'Delete' && disk === deleteDiskName(name, t.name)) {
    const owner = { kind: 'VirtualMachine', name, uid: m.metadata.uid ?? '' } as const;
    ledger.deleteCreates.push({ kind: 'createDisk', disk: newDisk(view.pool, t, disk, owner) });
  } else if (isRetainDiskName(disk, nameOf(view.pool), t.name) && !ledger.claimed.has(disk)) {
    ledger.claimed.add(disk);
    createRetain(view, ledger, disk, t);
  }
}
