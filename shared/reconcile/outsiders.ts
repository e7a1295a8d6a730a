/**
 * A plan that respects the VMs outside the pool (L3): planned from the pool's own reads, and planned
 * again with every VM of the namespace when it would bind, free or delete a disk.
 * @module
 */
import type { Observed, Plan, Rand } from '../domain/index.js';
import { freesDisks, plan } from '../domain/index.js';
import type { Kube, Outcome } from '../kube/index.js';

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
): Promise<Outcome<Plan>> {
  const first = plan(obs, now, rand);
  if (!freesDisks(first.actions)) return { ok: true, value: first };
  // An empty selector: every VM of the namespace, a pool's or not.
  const all = await kube.listVms(obs.pool.metadata.namespace ?? '', '');
  if (!all.ok) return all;
  return { ok: true, value: plan({ ...obs, vms: all.value }, now, rand) };
}
