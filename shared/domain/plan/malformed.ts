/**
 * Objects a list skipped because they do not parse (DESIGN L8): which pools they claim, and what
 * those pools say about them. Every other pool goes on as if they were not there.
 * @module
 */
import type { Malformed, VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { namespacedKey } from '../fleet/index.js';

/**
 * `Synced=False` reason: an object that claims the pool does not parse, so vmpool cannot see the
 * whole pool and creates and deletes nothing in it (an unseen member could break L1 or L3).
 */
export const MALFORMED_MEMBER = 'MalformedMember';

const POOL_KIND = 'VirtualMachinePool';
const VM_KIND = 'VirtualMachine';

/**
 * The pools (as `poolKey`: `<namespace>/<uid>`) a malformed object claims: the one its pool-uid
 * label names, the one its controller ownerReference names, and the pool of the VM that is its
 * controller (a member's disk), that VM found among `vms` or among the malformed themselves.
 */
export function claimedPools(
  item: Malformed,
  vms: readonly VirtualMachine[],
  malformed: readonly Malformed[] = [],
): string[] {
  const out = new Set<string>();
  const label = item.labels[keys.poolUid];
  if (label !== undefined && label !== '') out.add(namespacedKey(item.namespace, label));
  const owner = item.ownerReferences.find((r) => r.controller === true);
  if (owner?.kind === POOL_KIND && owner.uid !== '')
    out.add(namespacedKey(item.namespace, owner.uid));
  if (owner?.kind === VM_KIND) {
    const vm = vms.find((v) => v.metadata.uid === owner.uid);
    const pool =
      vm?.metadata.labels?.[keys.poolUid] ??
      malformed.find((m) => m.kind === VM_KIND && m.uid === owner.uid)?.labels[keys.poolUid];
    if (pool !== undefined && pool !== '') out.add(namespacedKey(item.namespace, pool));
  }
  return [...out];
}

/** Malformed objects by the pools they claim ({@link claimedPools}); one may claim several. */
export function malformedByPool(
  malformed: readonly Malformed[],
  vms: readonly VirtualMachine[],
): Map<string, Malformed[]> {
  const out = new Map<string, Malformed[]>();
  for (const m of malformed) {
    for (const key of claimedPools(m, vms, malformed)) {
      const group = out.get(key);
      if (group === undefined) out.set(key, [m]);
      else group.push(m);
    }
  }
  return out;
}

/** The {@link MALFORMED_MEMBER} message: the first object, its first issue, and the fix. */
export function malformedMessage(items: readonly Malformed[]): string {
  const first = items[0];
  if (first === undefined) return '';
  const more = items.length > 1 ? ` (and ${String(items.length - 1)} more)` : '';
  const resource = `${first.kind.toLowerCase()}/${first.name}`;
  return `${first.kind} ${first.namespace}/${first.name}${more} claims this pool but does not parse: ${first.issue}. vmpool cannot see this pool whole, so it creates and deletes nothing in it (disk GC included) until the object is fixed. Fix: correct the field (kubectl edit -n ${first.namespace} ${resource}), or take the object out of the pool (delete it, or remove its ${keys.poolUid} label and ownerReference).`;
}

/** What VMs that do not parse may be using (L3: a referenced disk is never collected). */
export interface Held {
  /** Disks they name, as `<namespace>/<name>`. */
  readonly disks: ReadonlySet<string>;
  /** Namespaces where any disk may be theirs, with the VMs whose references cannot be read. */
  readonly namespaces: ReadonlyMap<string, readonly Malformed[]>;
}

/** The disks (or whole namespaces) VMs that do not parse may reference; other kinds hold none. */
export function heldByMalformed(malformed: readonly Malformed[]): Held {
  const disks = new Set<string>();
  const namespaces = new Map<string, Malformed[]>();
  for (const m of malformed) {
    if (m.kind !== VM_KIND) continue;
    if (m.references === undefined)
      namespaces.set(m.namespace, [...(namespaces.get(m.namespace) ?? []), m]);
    else for (const name of m.references) disks.add(`${m.namespace}/${name}`);
  }
  return { disks, namespaces };
}
