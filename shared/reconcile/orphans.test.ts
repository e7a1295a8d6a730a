/**
 * Claims of a pool that does not exist learn it on their status (Pending with PoolNotFound, or Lost once bound).
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineClaim } from '../api/index.js';
import { NOW, pool } from '../../test/unit/builders.js';
import { claim } from '../../test/unit/claim-builders.js';
import { memoryKube } from '../../test/unit/memory-kube.js';
import { testLog } from '../../test/logs.js';
import { reconcilePool } from './converge.js';

describe('claims of a pool that does not exist', () => {
  const bound = claim('bound', {
    pool: 'missing',
    status: {
      phase: 'Bound',
      virtualMachineName: 'missing-aaaaa',
      boundAt: '2025-01-01T11:00:00Z',
    },
  });
  const seed = () =>
    memoryKube({
      pool: pool(),
      claims: [claim('waiting', { pool: 'missing' }), bound, claim('mine')],
    });
  const deps = (m: ReturnType<typeof seed>) => ({
    kube: m.kube,
    now: () => NOW,
    rand: () => 0.5,
    log: testLog('orphans'),
    sleep: () => Promise.resolve(),
  });
  const status = (m: ReturnType<typeof seed>, n: string) =>
    (m.store.claim.get(n) as VirtualMachineClaim).status;

  it('get Pending with PoolNotFound, or Lost when bound; claims of other pools are left alone', async () => {
    const m = seed();
    expect(await reconcilePool(deps(m), 'ci', 'missing')).toEqual({ kind: 'gone' });
    expect(status(m, 'waiting')).toMatchObject({
      phase: 'Pending',
      conditions: [{ type: 'Bound', status: 'False', reason: 'PoolNotFound' }],
    });
    expect(status(m, 'bound')).toMatchObject({
      phase: 'Lost',
      virtualMachineName: 'missing-aaaaa',
      conditions: [{ type: 'Bound', status: 'False', reason: 'Lost' }],
    });
    expect(status(m, 'mine')).toBeUndefined();
    expect(m.claimEvents).toEqual(['bound ClaimLost']);
    // Said once: the next event for the missing pool writes nothing (L5).
    const writes = m.writes.length;
    await reconcilePool(deps(m), 'ci', 'missing');
    expect(m.writes).toHaveLength(writes);
  });
});
