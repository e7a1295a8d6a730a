/**
 * Who belongs to a pool and in what state: the pool-uid label plus the controller ownerReference.
 * @module
 */
import type {
  Condition,
  VirtualDisk,
  VirtualMachine,
  VirtualMachinePool,
} from '../../api/index.js';
import { controllerOf, keys } from '../../api/index.js';

/** The label selector of a pool's members and disks (also `status.selector`). */
export function selectorOf(pool: VirtualMachinePool): string {
  return `${keys.poolUid}=${pool.metadata.uid ?? ''}`;
}

/**
 * The selector `status.selector` reports for `/scale` and an HPA: the members that count as
 * replicas. With a standby it leaves the standby members out; without one it is {@link selectorOf}.
 */
export function scaleSelectorOf(pool: VirtualMachinePool): string {
  const base = selectorOf(pool);
  // `notin`, not `!=`: /scale turns the selector into a metav1.LabelSelector, which has no `!=`.
  return pool.spec.standby === undefined ? base : `${base},${keys.standby} notin (true)`;
}

/** True when the object's controller ownerReference is the pool. */
export function ownedBy(obj: VirtualMachine | VirtualDisk, poolUid: string | undefined): boolean {
  return poolUid !== undefined && controllerOf(obj.metadata)?.uid === poolUid;
}

/** True when a VM is a member: it carries the pool-uid label and the pool is its controller. */
export function isMember(pool: VirtualMachinePool, vm: VirtualMachine): boolean {
  const uid = pool.metadata.uid;
  return vm.metadata.labels?.[keys.poolUid] === uid && ownedBy(vm, uid);
}

/**
 * `<namespace>/<name or uid>`: the one shape of every key that files an object by namespace (a
 * pool's objects under {@link poolKey}, claims and their metrics under the pool's name), so keys
 * made in different places meet.
 */
export const namespacedKey = (namespace: string | undefined, id: string | undefined): string =>
  `${namespace ?? ''}/${id ?? ''}`;

/** The key {@link byPool} files a pool's VMs and disks under: its namespace and uid. */
export function poolKey(pool: {
  readonly metadata: { readonly namespace?: string | undefined; readonly uid?: string | undefined };
}): string {
  return namespacedKey(pool.metadata.namespace, pool.metadata.uid);
}

/**
 * VMs or disks by `<namespace>/<pool-uid label>` ({@link poolKey}): what each pool's own labelled
 * list would return, from one list of many pools. Unlabelled objects are left out.
 */
export function byPool<T extends VirtualMachine | VirtualDisk>(
  objs: readonly T[],
): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const o of objs) {
    const uid = o.metadata.labels?.[keys.poolUid];
    if (uid === undefined || uid === '') continue;
    const key = namespacedKey(o.metadata.namespace, uid);
    const group = out.get(key);
    if (group === undefined) out.set(key, [o]);
    else group.push(o);
  }
  return out;
}

/** The pool's members among `vms` (Terminating and Stopped ones included). */
export function membersOf(
  pool: VirtualMachinePool,
  vms: readonly VirtualMachine[],
): VirtualMachine[] {
  return vms.filter((vm) => isMember(pool, vm));
}

/** True when an object is being deleted. */
export function isTerminating(obj: VirtualMachine | VirtualDisk): boolean {
  return obj.metadata.deletionTimestamp !== undefined;
}

/** Ready means exactly phase Running, as in the reference. */
export function isReady(vm: VirtualMachine): boolean {
  return !isTerminating(vm) && vm.status?.phase === 'Running';
}

/** A condition of a VM by type. */
export function conditionOf(vm: VirtualMachine, type: string): Condition | undefined {
  return vm.status?.conditions?.find((c) => c.type === type);
}

/** The name of an object (always set on objects read from the API server). */
export function nameOf(obj: { metadata: { name?: string | undefined } }): string {
  return obj.metadata.name ?? '';
}

/**
 * Orders oldest first: by creationTimestamp (RFC 3339 sorts as text); within one second by the pool
 * generation the member was planned at (unstamped members count as oldest); then by name.
 */
export function byAge(a: VirtualMachine, b: VirtualMachine): number {
  const ta = a.metadata.creationTimestamp ?? '';
  const tb = b.metadata.creationTimestamp ?? '';
  if (ta !== tb) return ta < tb ? -1 : 1;
  const ga = createdGeneration(a);
  const gb = createdGeneration(b);
  if (ga !== gb) return ga - gb;
  return nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0;
}

/** The pool generation a member was planned at; -1 when absent or not a plain integer. */
export function createdGeneration(vm: VirtualMachine): number {
  const text = vm.metadata.annotations?.[keys.createdGeneration];
  return text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : -1;
}
