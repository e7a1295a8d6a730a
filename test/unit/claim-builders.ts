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
import { at } from './builders.js';

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
