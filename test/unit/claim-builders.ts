/**
 * Claims for unit tests: a VirtualMachineClaim of the `runners` pool, and a pool with `spec.claims`.
 * @module
 */
import type {
  ClaimStatus,
  OnRelease,
  PoolClaims,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../../shared/api/index.js';
import { CLAIM_API_VERSION } from '../../shared/api/index.js';
import type { Plan } from '../../shared/domain/index.js';
import { claimOf, eventFor } from '../../shared/domain/index.js';
import { HOUR, MINUTE, NOW, at, pool, steady } from './builders.js';
import type { World } from './world.js';
import { converge } from './world.js';

/** Options of a claim. */
export interface ClaimOptions {
  pool?: string;
  /** creationTimestamp; default one minute before NOW. */
  created?: string;
  ttl?: string;
  onRelease?: OnRelease;
  holder?: string;
  status?: ClaimStatus;
  uid?: string;
  deleting?: boolean;
}

/** A claim `name` in namespace `ci` of pool `runners` (uid `uid-<name>`, resourceVersion 1). */
export function claim(name: string, o: ClaimOptions = {}): VirtualMachineClaim {
  const c: VirtualMachineClaim = {
    apiVersion: CLAIM_API_VERSION,
    kind: 'VirtualMachineClaim',
    metadata: {
      name,
      namespace: 'ci',
      uid: o.uid ?? `uid-${name}`,
      resourceVersion: '1',
      generation: 1,
      creationTimestamp: o.created ?? at(-60_000),
    },
    spec: {
      poolName: o.pool ?? 'runners',
      ...(o.ttl === undefined ? {} : { ttl: o.ttl }),
      ...(o.onRelease === undefined ? {} : { onRelease: o.onRelease }),
      ...(o.holder === undefined ? {} : { holder: o.holder }),
    },
  };
  if (o.status !== undefined) c.status = o.status;
  if (o.deleting === true) c.metadata.deletionTimestamp = at(0);
  return c;
}

/** `p` with `spec.claims` (minIdle 0, maxReplicas 10, onRelease Delete unless said otherwise). */
export function withClaims(
  p: VirtualMachinePool,
  claims: Partial<PoolClaims> = {},
): VirtualMachinePool {
  return {
    ...p,
    spec: {
      ...p.spec,
      claims: { minIdle: 0, maxReplicas: 10, onRelease: 'Delete', ...claims },
    },
  };
}

/** `ms` after NOW. */
export const later = (ms: number): Date => new Date(NOW.getTime() + ms);
/** An object's name. */
export const name = (o: { metadata: { name?: string | undefined } }): string =>
  o.metadata.name ?? '';

/** A converged pool of `n` Running members, `m0` Running longest, with `claims` set when given. */
export function world(n: number, claims?: Parameters<typeof withClaims>[1]): World {
  const base = pool({ replicas: n });
  const p = claims === undefined ? base : withClaims(base, claims);
  const ms = Array.from({ length: n }, (_, i) =>
    steady(p, `runners-m${i}xxx`, { created: at(-HOUR + i * MINUTE) }),
  );
  return converge({ pool: p, vms: ms.map((m) => m.vm), disks: ms.flatMap((m) => m.disks) }, NOW).w;
}
/** Converges `w` at `now` (at most 12 passes). */
export const run = (w: World, now: Date = NOW): { w: World; plans: Plan[] } => converge(w, now, 12);
/** The kinds of a plan's actions. */
export const kinds = (p: Plan): string[] => p.actions.map((a) => a.kind);
/** Member name → claim name, from the members' marks. */
export const claimed = (w: World): Map<string, string> =>
  new Map(
    w.vms.flatMap((v) => {
      const c = claimOf(v);
      return c === undefined ? [] : [[name(v), c.name] as [string, string]];
    }),
  );
/** The claim `n` of the world. */
export const claimIn = (w: World, n: string): VirtualMachineClaim | undefined =>
  w.claims?.find((c) => name(c) === n);
/** The Event reasons a plan's actions record when they succeed. */
export const events = (p: Plan): string[] =>
  p.actions.flatMap((a) => eventFor(a, true)?.reason ?? []);
