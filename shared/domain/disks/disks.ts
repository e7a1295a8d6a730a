/**
 * Per-replica disks: which template a reference belongs to, placeholder resolution, the choice of a
 * free Retain disk, and the disk objects vmpool creates.
 * @module
 */
import type {
  BlockDeviceRef,
  Binding,
  DiskTemplate,
  Quantity,
  VirtualDisk,
  VirtualMachine,
  VirtualMachinePool,
} from '../../api/index.js';
import { API_VERSION, keys } from '../../api/index.js';
import { cloneJson, deleteDiskName, isRetainDiskName, quantityValue } from '../formats/index.js';
import { isTerminating, nameOf, ownedBy } from '../fleet/index.js';

/** The reclaim policy of a template (Delete when unset). */
export function policyOf(t: Pick<DiskTemplate, 'reclaim'>): 'Delete' | 'Retain' {
  return t.reclaim?.onScaleDown ?? 'Delete';
}

/** Names of the VirtualDisk references of a VM. */
export function diskRefs(vm: VirtualMachine): string[] {
  return (vm.spec.blockDeviceRefs ?? []).filter((r) => r.kind === 'VirtualDisk').map((r) => r.name);
}

/** Where a VM's reference for one template is, and whether it still names the template itself. */
export interface RefSlot {
  /** The template the reference is for. */
  readonly template: string;
  readonly index: number;
  readonly disk: string;
  readonly placeholder: boolean;
}

/**
 * A member's slots, one per template it references, in the order of its references. An array, not a
 * map: every staying member of every plan gets one, and a member has a few templates, so a scan is
 * cheaper than a hash table (and allocates a tenth of one).
 */
export type Slots = readonly RefSlot[];

/** The slot of `template` among `slots`, if the member references one. */
export function slotOf(slots: Slots, template: string): RefSlot | undefined {
  for (const s of slots) if (s.template === template) return s;
  return undefined;
}

/**
 * Finds, for each template, the reference a member uses for it: a disk labelled with the template, a
 * name of the template's shape (a disk that vanished), a recorded binding, or the template's own
 * name (an unresolved placeholder, as the reference implementation leaves on new VMs). The first
 * reference of a template wins.
 */
export function slotsOf(
  pool: VirtualMachinePool,
  vm: VirtualMachine,
  diskByName: ReadonlyMap<string, VirtualDisk>,
  bindings: readonly Binding[],
): RefSlot[] {
  const slots: RefSlot[] = [];
  const refs = vm.spec.blockDeviceRefs ?? [];
  for (let index = 0; index < refs.length; index++) {
    const ref = refs[index] as BlockDeviceRef;
    if (ref.kind !== 'VirtualDisk') continue;
    const disk = diskByName.get(ref.name);
    let template: string | undefined;
    let placeholder = false;
    if (disk !== undefined) {
      if (disk.metadata.labels?.[keys.poolUid] === pool.metadata.uid)
        template = disk.metadata.labels?.[keys.diskTemplate];
    } else {
      // A reference to a disk not read (rare): only then are the templates' names looked at.
      ({ template, placeholder } = unreadRef(pool, vm, ref.name, bindings));
    }
    if (template !== undefined && slotOf(slots, template) === undefined)
      slots.push({ template, index, disk: ref.name, placeholder });
  }
  return slots;
}

/** Each template name's bit, and all of them together: what {@link whole} checks a member against. */
export interface TemplateBits {
  readonly bits: ReadonlyMap<string, number>;
  readonly all: number;
}

/** The templates' bits; undefined for more names than bits (every member then takes the long way). */
export function templateBits(templates: readonly DiskTemplate[]): TemplateBits | undefined {
  const bits = new Map<string, number>();
  for (const t of templates) if (!bits.has(t.name)) bits.set(t.name, 1 << bits.size);
  if (bits.size > 30) return undefined;
  return { bits, all: 2 ** bits.size - 1 };
}

/**
 * True when each disk reference of `vm` names a disk read and labelled for the pool, and together
 * they cover every template: then each template's slot is a disk that exists, and a member that lost
 * none of them to a collision needs nothing. Decided without building the member's slots, as for
 * every member of a quiet pool.
 */
export function whole(
  pool: VirtualMachinePool,
  vm: VirtualMachine,
  diskByName: ReadonlyMap<string, VirtualDisk>,
  templates: TemplateBits,
): boolean {
  let mask = 0;
  for (const r of vm.spec.blockDeviceRefs ?? []) {
    if (r.kind !== 'VirtualDisk') continue;
    const labels = diskByName.get(r.name)?.metadata.labels;
    if (labels === undefined || labels[keys.poolUid] !== pool.metadata.uid) return false;
    mask |= templates.bits.get(labels[keys.diskTemplate] ?? '') ?? 0;
  }
  return mask === templates.all;
}

/** The template of a reference to a disk that was not read: a placeholder, a name's shape, a binding. */
function unreadRef(
  pool: VirtualMachinePool,
  vm: VirtualMachine,
  ref: string,
  bindings: readonly Binding[],
): { template: string | undefined; placeholder: boolean } {
  const templates = pool.spec.virtualDiskTemplates.map((t) => t.name);
  if (templates.includes(ref)) return { template: ref, placeholder: true };
  const vmN = nameOf(vm);
  const poolName = nameOf(pool);
  const template =
    templates.find((t) => ref === deleteDiskName(vmN, t) || isRetainDiskName(ref, poolName, t)) ??
    bindings.find((b) => b.vm === vmN && b.disk === ref)?.template;
  return { template, placeholder: false };
}

/** Replaces the VirtualDisk placeholders of template refs with bound disk names, in place. */
export function resolveRefs(
  refs: readonly BlockDeviceRef[],
  bound: ReadonlyMap<string, string>,
): BlockDeviceRef[] {
  return refs.map((r) => {
    if (r.kind !== 'VirtualDisk') return { ...r };
    const disk = bound.get(r.name);
    return disk === undefined ? { ...r } : { ...r, name: disk };
  });
}

/**
 * Renames the slot's reference (a placeholder, or a disk lost to a collision) in place, keeping its
 * position and bootOrder; with no slot the disk is appended, so a live member's boot disk never moves.
 */
export function placeRef(
  refs: readonly BlockDeviceRef[],
  disk: string,
  slot: RefSlot | undefined,
): BlockDeviceRef[] {
  const out = refs.map((r) => ({ ...r }));
  const at = slot?.index ?? -1;
  const current = out[at];
  if (current !== undefined) out[at] = { ...current, name: disk };
  else out.push({ kind: 'VirtualDisk', name: disk });
  return out;
}

/** The byte size a disk has or asks for. */
export function diskSize(disk: VirtualDisk): number | undefined {
  return quantityValue(disk.spec.persistentVolumeClaim?.size);
}

/** The disk with its free-since stamp set to `at`, or removed when `at` is undefined. */
export function stampFree(disk: VirtualDisk, at: string | undefined): VirtualDisk {
  const annotations = { ...disk.metadata.annotations };
  if (at === undefined) delete annotations[keys.freeSince];
  else annotations[keys.freeSince] = at;
  return { ...disk, metadata: { ...disk.metadata, annotations } };
}

/** The template's size when the disk has none or a smaller one (disks only ever grow). */
export function growthOf(template: DiskTemplate, disk: VirtualDisk): Quantity | undefined {
  const want = template.spec.persistentVolumeClaim?.size;
  // The usual case, decided without parsing: a disk asking for exactly the template's size.
  if (disk.spec.persistentVolumeClaim?.size === want) return undefined;
  const wantBytes = quantityValue(want);
  if (want === undefined || wantBytes === undefined) return undefined;
  const have = diskSize(disk);
  return have === undefined || have < wantBytes ? want : undefined;
}

/** The disk asking for `size`. */
export function withSize(disk: VirtualDisk, size: Quantity): VirtualDisk {
  return {
    ...disk,
    spec: {
      ...disk.spec,
      persistentVolumeClaim: { ...disk.spec.persistentVolumeClaim, size },
    },
  };
}

/** A disk is reusable when it is not being deleted and has not Failed. */
export function reusable(disk: VirtualDisk): boolean {
  return !isTerminating(disk) && disk.status?.phase !== 'Failed';
}

/** The moment a free disk was freed, in ms since the epoch; undefined when unstamped or unparsable. */
export function freedAt(disk: VirtualDisk): number | undefined {
  const stamp = disk.metadata.annotations?.[keys.freeSince];
  if (stamp === undefined) return undefined;
  const t = Date.parse(stamp);
  return Number.isNaN(t) ? undefined : t;
}

/**
 * Free disks in the order they are reused: Ready before others, most recently freed first (an
 * unstamped disk was freed just now), then by name so concurrent planners agree. (A disk a leaving
 * member still holds is in use, not a candidate.) A plan that binds many members ranks the candidates
 * once and takes them in turn; each disk's keys are read once, not per comparison.
 */
export function rankFree(candidates: readonly VirtualDisk[]): VirtualDisk[] {
  const keyed = candidates.map((d) => ({
    d,
    k: [d.status?.phase === 'Ready' ? 0 : 1, -(freedAt(d) ?? Number.MAX_SAFE_INTEGER)] as const,
    name: nameOf(d),
  }));
  keyed.sort((a, b) => {
    for (let i = 0; i < 2; i++) if (a.k[i] !== b.k[i]) return (a.k[i] ?? 0) - (b.k[i] ?? 0);
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
  return keyed.map((x) => x.d);
}

/** Who owns a new disk: the pool (Retain) or the VM (Delete). */
export interface DiskOwner {
  readonly kind: 'VirtualMachinePool' | 'VirtualMachine';
  readonly name: string;
  /** Unknown for a VM created in the same pass: the executor fills it in from the create. */
  readonly uid?: string;
}

/** A new disk for a template, labelled for the pool, owned by `owner`. */
export function newDisk(
  pool: VirtualMachinePool,
  template: DiskTemplate,
  name: string,
  owner: DiskOwner,
): VirtualDisk {
  return {
    apiVersion: API_VERSION,
    kind: 'VirtualDisk',
    metadata: {
      name,
      namespace: pool.metadata.namespace,
      labels: {
        [keys.poolUid]: pool.metadata.uid ?? '',
        [keys.pool]: nameOf(pool),
        [keys.diskTemplate]: template.name,
      },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: owner.kind,
          name: owner.name,
          uid: owner.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: cloneJson(template.spec),
  };
}

/** True for a disk of the pool's own (labelled for it), not Terminating: one of `View.poolDisks`. */
export function isPoolDisk(pool: VirtualMachinePool, disk: VirtualDisk): boolean {
  return !isTerminating(disk) && disk.metadata.labels?.[keys.poolUid] === pool.metadata.uid;
}

/** The template a pool disk's label names; undefined for another disk or a removed template. */
export function templateOfDisk(
  pool: VirtualMachinePool,
  disk: VirtualDisk,
): DiskTemplate | undefined {
  if (!isPoolDisk(pool, disk)) return undefined;
  const name = disk.metadata.labels?.[keys.diskTemplate] ?? '';
  // The last of a name, as a Map of the templates by name holds it.
  return pool.spec.virtualDiskTemplates.findLast((t) => t.name === name);
}

/** True when a pool-owned disk belongs to the pool by label and controller. */
export function poolOwned(
  pool: { readonly metadata: { readonly uid?: string | undefined } },
  disk: VirtualDisk,
): boolean {
  return (
    disk.metadata.labels?.[keys.poolUid] === pool.metadata.uid && ownedBy(disk, pool.metadata.uid)
  );
}
