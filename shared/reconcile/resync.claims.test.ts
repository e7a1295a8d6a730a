/**
 * The resync tick with claims: a pool with a pending claim is never taken as quiet.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineClaim } from '../api/index.js';
import { NOW, pool } from '../../test/unit/builders.js';
import { claim } from '../../test/unit/claim-builders.js';
import { memoryKube } from '../../test/unit/memory-kube.js';
import { testLog } from '../../test/logs.js';
import { reconcileScope } from './resync.js';
import { steady } from '../../test/unit/builders.js';

describe('the resync tick', () => {
  it('binds a claim whose event was lost: a converged pool with a pending claim is not quiet', async () => {
    const p = pool({ replicas: 1 });
    const m0 = steady(p, 'runners-m0xxx');
    const m = memoryKube({ pool: p, vms: [m0.vm], disks: m0.disks });
    const deps = {
      kube: m.kube,
      now: () => NOW,
      rand: () => 0.5,
      log: testLog('resync'),
      sleep: () => Promise.resolve(),
    };
    await reconcileScope(deps, { kind: 'namespace', namespace: 'ci' });
    const quiet = m.writes.length;
    await reconcileScope(deps, { kind: 'namespace', namespace: 'ci' });
    expect(m.writes).toHaveLength(quiet);
    // A claim appears and its event is lost: the next tick binds it.
    m.store.claim.set('job-1', claim('job-1'));
    await reconcileScope(deps, { kind: 'namespace', namespace: 'ci' });
    expect((m.store.claim.get('job-1') as VirtualMachineClaim).status?.phase).toBe('Bound');
  });
});
