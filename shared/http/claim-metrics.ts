/**
 * The metrics of claims: how many a pool has in each phase, its idle members, and how long a claim
 * waits from its creation until it is Bound (a member idle at once: the write latency; none idle:
 * a VM start).
 * @module
 */
import { namespacedKey } from '../domain/index.js';
import type { ClaimObserver } from '../reconcile/claim-metrics.js';
import type { Gauge, Histogram, Registry } from './metrics.js';

/** Buckets of the claim-to-Bound latency, seconds: 50 ms to 30 minutes. */
export const BIND_BUCKETS: readonly number[] = [
  0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800,
];

/** The claim phases reported, every one of them for every pool that uses claims (0 when none). */
const PHASES = ['Pending', 'Bound', 'Expired', 'Lost'] as const;

/** Claim metrics, and what a reconcile tells them (as its {@link ClaimObserver}). */
export interface ClaimMetrics extends ClaimObserver {
  readonly byPhase: Gauge<'namespace' | 'pool' | 'phase'>;
  readonly idle: Gauge<'namespace' | 'pool'>;
  readonly bindSeconds: Histogram<'namespace' | 'pool'>;
}

/** Uids of deleted pools remembered at most, so a report read before a delete is ignored. */
const GONE_MEMORY = 10_000;

/**
 * Registers the claim metrics in `registry`. A pool has series from the first report that says it
 * uses claims until it is gone, or created again under its name: a cluster of pools without claims
 * holds none (docs/performance.md measured what five series a pool cost at 10,000 pools).
 */
export function createClaimMetrics(registry: Registry): ClaimMetrics {
  const byPhase = registry.gauge(
    'vmpool_claims',
    'VirtualMachineClaims of a pool by phase, as the latest reconcile that read them saw them.',
    ['namespace', 'pool', 'phase'],
  );
  const idle = registry.gauge(
    'vmpool_idle_members',
    'Members of a pool a claim could take now (status.idleReplicas).',
    ['namespace', 'pool'],
  );
  const bindSeconds = registry.histogram(
    'vmpool_claim_bind_seconds',
    'Seconds from a claim creation to its Bound status.',
    ['namespace', 'pool'],
    BIND_BUCKETS,
  );
  /**
   * Each pool that has series, by `namespacedKey(namespace, pool)` (the keys `retain` is given are
   * `claimKey`'s, the same), with the uid they are of.
   */
  const reported = new Map<string, { namespace: string; pool: string; uid: string }>();
  const gone = new Set<string>();
  const drop = (key: string): void => {
    const r = reported.get(key);
    if (r === undefined) return;
    reported.delete(key);
    const { namespace, pool } = r;
    for (const phase of PHASES) byPhase.remove({ namespace, pool, phase });
    idle.remove({ namespace, pool });
    bindSeconds.remove({ namespace, pool });
  };
  return {
    byPhase,
    idle,
    bindSeconds,
    pool(namespace, pool, uid, phases, count, uses) {
      if (gone.has(uid)) return;
      const key = namespacedKey(namespace, pool);
      if (reported.get(key)?.uid !== uid) drop(key);
      if (!uses && !reported.has(key)) return;
      reported.set(key, { namespace, pool, uid });
      if (phases !== undefined)
        for (const phase of PHASES) byPhase.set({ namespace, pool, phase }, phases[phase] ?? 0);
      idle.set({ namespace, pool }, count);
    },
    bound(namespace, pool, seconds) {
      if (!reported.has(namespacedKey(namespace, pool))) return;
      bindSeconds.observe({ namespace, pool }, Math.max(0, seconds));
    },
    gone(namespace, pool) {
      const key = namespacedKey(namespace, pool);
      const uid = reported.get(key)?.uid;
      if (uid !== undefined && uid !== '') {
        if (gone.size >= GONE_MEMORY) gone.clear();
        gone.add(uid);
      }
      drop(key);
    },
    retain(pools) {
      for (const key of [...reported.keys()]) if (!pools.has(key)) drop(key);
    },
  };
}
