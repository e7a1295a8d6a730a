/**
 * Fleet control in the chaos suite: which pools run with protection, deletion costs and a drain
 * timeout, the mutations that toggle them, and the agent that marks draining members drained (the
 * rest time out).
 * @module
 */
import { keys } from '../../shared/api/index.js';
import type { VirtualMachine } from '../../shared/api/index.js';
import type { Kube } from '../../shared/kube/index.js';
import type { Rng } from './kit.js';
import type { Seen } from './observer.js';

/** The fleet-control and lifecycle knobs of one chaos pool. */
export interface FleetFeatures {
  readonly protection: boolean;
  readonly costs: boolean;
  /** `spec.scaleDown.drainTimeout`, when the pool drains. */
  readonly drainTimeout?: string;
  readonly drainTimeoutMs?: number;
  /** `spec.standby` (its replicas change with the `standby` mutation). */
  readonly standby?: { readonly state: 'Stopped' | 'Running'; readonly reuseOnScaleDown: boolean };
  /** `spec.rollout.maxUnavailable`, checked at every event beside the simulator. */
  readonly budget?: number;
  /** Pauses now and then (the `pause` mutation). */
  readonly pause?: boolean;
}

/** Timeout of draining chaos pools: short, so an undrained member times out within a settle. */
export const CHAOS_DRAIN_MS = 2000;

/**
 * Worker 0 runs today's behaviour (no knob set); the others switch the features on: a draining pool,
 * a pool with protection, costs and a stopped standby that takes removed members back, and one with
 * everything: a running standby taking members back, a rollout budget of one, pauses.
 */
export function featuresOf(worker: number): FleetFeatures {
  const drain = { drainTimeout: `${CHAOS_DRAIN_MS / 1000}s`, drainTimeoutMs: CHAOS_DRAIN_MS };
  switch (worker % 4) {
    case 0:
      return { protection: false, costs: false };
    case 1:
      return { protection: false, costs: false, ...drain };
    case 2:
      return {
        protection: true,
        costs: true,
        standby: { state: 'Stopped', reuseOnScaleDown: true },
      };
    default:
      return {
        protection: true,
        costs: true,
        ...drain,
        standby: { state: 'Running', reuseOnScaleDown: true },
        budget: 1,
        pause: true,
      };
  }
}

/** Sets (or with `undefined` removes) an annotation on a VM, re-reading on conflict. */
export async function annotateVm(
  kube: Kube,
  namespace: string,
  name: string,
  key: string,
  value: string | undefined,
): Promise<boolean> {
  return (await noteVm(kube, namespace, name, key, value)) !== undefined;
}

/**
 * Sets (or removes) an annotation with an update conditioned on the version just read, re-reading
 * on conflict: the VM as that write stored it, or undefined when no write succeeded.
 */
export async function noteVm(
  kube: Kube,
  namespace: string,
  name: string,
  key: string,
  value: string | undefined,
): Promise<VirtualMachine | undefined> {
  for (let i = 0; i < 20; i++) {
    const got = await kube.getVm(namespace, name);
    if (!got.ok) return undefined;
    const annotations = { ...got.value.metadata.annotations };
    if (value === undefined) delete annotations[key];
    else annotations[key] = value;
    const wrote = await kube.updateVm({
      ...got.value,
      metadata: { ...got.value.metadata, annotations },
    });
    if (wrote.ok) return wrote.value;
    if (wrote.reason !== 'conflict') return undefined;
  }
  return undefined;
}

/** `members` as they look after `name` got `key: value` (`undefined` removes it). */
export function withNote(
  members: readonly Seen[],
  name: string,
  key: string,
  value: string | undefined,
): Seen[] {
  return members.map((m) => {
    if (m.metadata.name !== name) return m;
    const annotations = { ...m.metadata.annotations };
    if (value === undefined) delete annotations[key];
    else annotations[key] = value;
    return { ...m, metadata: { ...m.metadata, annotations } };
  });
}

/** Costs the chaos sets: negative, zero, positive, and one malformed (counts as 0, warned about). */
export const CHAOS_COSTS = ['-100', '-1', '0', '5', 'cheap'] as const;

/**
 * The drain agent: decides once per VM whether it will finish draining (then marks it drained) or
 * hang (then it times out). Returns the members still draining.
 */
export async function drainAgent(
  kube: Kube,
  namespace: string,
  pool: string,
  dice: Rng,
  decided: Map<string, boolean>,
): Promise<number> {
  const vms = await kube.listVms(namespace, `${keys.pool}=${pool}`);
  if (!vms.ok) return 1;
  let draining = 0;
  for (const v of vms.value) {
    const name = v.metadata.name ?? '';
    const asked = v.metadata.annotations?.[keys.drainRequested];
    if (asked === undefined || v.metadata.deletionTimestamp !== undefined) continue;
    draining++;
    const uid = `${name}/${v.metadata.uid ?? ''}/${asked}`;
    if (!decided.has(uid)) decided.set(uid, dice.chance(0.6));
    if (decided.get(uid) === true && v.metadata.annotations?.[keys.drained] !== 'true')
      await annotateVm(kube, namespace, name, keys.drained, 'true');
  }
  return draining;
}
