/**
 * Claims of a pool that does not exist: they learn it on their status (Pending with PoolNotFound,
 * or Lost once bound), so a holder waiting on a typo'd pool name is told why.
 * @module
 */
import { eventFor, orphanStatus } from '../domain/index.js';
import type { ReconcileDeps } from './converge.js';
import { claimsOf } from './converge.js';

/** Writes the status of every claim of the missing pool `name` in `namespace` that needs it. */
export async function settleOrphanClaims(
  deps: Pick<ReconcileDeps, 'kube' | 'now' | 'log'>,
  namespace: string,
  name: string,
): Promise<void> {
  const listed = await claimsOf(deps.kube, namespace);
  if (!listed.ok) {
    deps.log.warn({ pool: `${namespace}/${name}`, err: listed.message }, 'listing claims failed');
    return;
  }
  const now = deps.now();
  const writes = listed.value.flatMap((c) => {
    if (c.spec.poolName !== name) return [];
    const w = orphanStatus(c, now);
    return w === undefined ? [] : [w];
  });
  await Promise.all(
    writes.map(async (w) => {
      // A 409 or 404: the claim changed or went since the list; its own event brings it back.
      const o = await deps.kube.updateClaimStatus(w.claim);
      const ev = o.ok ? eventFor(w, true) : undefined;
      if (ev !== undefined)
        await deps.kube.recordClaimEvent(
          namespace,
          { name: w.claim.metadata.name ?? '', uid: w.claim.metadata.uid ?? '' },
          ev,
        );
    }),
  );
}
