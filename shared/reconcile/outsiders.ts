/**
 * A plan that respects the VMs outside the pool (L3): planned from the pool's own reads, and planned
 * again with every VM of the namespace when it would bind, free or delete a disk.
 * @module
 */
import type { Malformed, VirtualMachine } from '../api/index.js';
import type { Observed, Plan, Rand } from '../domain/index.js';
import { freesDisks, heldByMalformed, malformedByPool, plan, poolKey } from '../domain/index.js';
import type { Failure, Kube } from '../kube/index.js';

/** A plan, or the objects that keep the pool from being seen whole (it acts on nothing then). */
export type Planned =
  | { readonly ok: true; readonly value: Plan }
  | { readonly ok: true; readonly unseen: readonly Malformed[] }
  | Failure;

/**
 * Plans `obs` (the pool's labelled VMs and disks). A plan that claims a free disk, stamps one free or
 * deletes one is planned again with every VM of the namespace added, so a VM outside the pool (a
 * detached member, a VM a disk was hot-plugged into) keeps the disks it references. That costs one
 * more list of the namespace's VMs, only in passes that make such a decision: a pool at rest, or one
 * whose changes touch no free disk, reads what it read before.
 */
export async function planRespectingOutsiders(
  kube: Kube,
  obs: Observed,
  now: Date,
  rand: Rand,
): Promise<Planned> {
  const first = plan(obs, now, rand);
  if (!freesDisks(first.actions)) return { ok: true, value: first };
  // An empty selector: every VM of the namespace, a pool's or not.
  const ns = obs.pool.metadata.namespace ?? '';
  const all = await kube.listVms(ns, '');
  if (!all.ok) return all;
  const skipped = all.malformed ?? [];
  if (skipped.length === 0) return { ok: true, value: plan({ ...obs, vms: all.value }, now, rand) };
  // A VM that does not parse may be the pool's (it claims it) or may hold any disk it names.
  const held = heldByMalformed(skipped);
  const unseen =
    malformedByPool(skipped, all.value).get(poolKey(obs.pool)) ?? held.namespaces.get(ns);
  if (unseen !== undefined) return { ok: true, unseen };
  return {
    ok: true,
    value: plan({ ...obs, vms: [...all.value, ...holders(held.disks, ns)] }, now, rand),
  };
}

/** Stand-ins for VMs that do not parse: outside every pool, naming the disks they reference. */
function holders(disks: ReadonlySet<string>, ns: string): VirtualMachine[] {
  const names = [...disks].filter((k) => k.startsWith(`${ns}/`)).map((k) => k.slice(ns.length + 1));
  if (names.length === 0) return [];
  return [
    {
      metadata: { name: '', namespace: ns },
      spec: { blockDeviceRefs: names.map((name) => ({ kind: 'VirtualDisk' as const, name })) },
    },
  ];
}
