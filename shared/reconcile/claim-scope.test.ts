/**
 * Claim events: a claim reconciles the pool it names, and the claims of a pool that does not exist
 * learn it on their status (Pending with PoolNotFound, or Lost once bound).
 */
import { describe, expect, it } from 'vitest';
import type { SourceEvent, VirtualMachineClaim, WatchedObject } from '../api/index.js';
import { APISERVER_RESOURCE } from '../api/index.js';
import { NOW, pool } from '../../test/unit/builders.js';
import { claim } from '../../test/unit/claim-builders.js';
import { fakeKube } from '../../test/unit/fake-kube.js';
import { memoryKube } from '../../test/unit/memory-kube.js';
import { testLog } from '../../test/logs.js';
import { reconcilePool } from './converge.js';
import { reconcileScope } from './resync.js';
import { steady } from '../../test/unit/builders.js';
import { scopeOf, scopeOfObject } from './scope.js';

describe('a claim event', () => {
  it('maps to the pool its spec.poolName names, in its namespace', async () => {
    const c = claim('job-1', { pool: 'gpu' });
    expect(scopeOfObject(c as WatchedObject)).toEqual({
      kind: 'pool',
      namespace: 'ci',
      name: 'gpu',
    });
    const event = {
      specversion: '1.0',
      id: '1',
      source: 'apiserversource',
      type: `${APISERVER_RESOURCE}update`,
      data: c,
    } as SourceEvent;
    expect(await scopeOf(event, fakeKube().kube)).toEqual({
      kind: 'pool',
      namespace: 'ci',
      name: 'gpu',
    });
  });

  it('without a readable poolName falls back to its namespace', () => {
    const c = { ...claim('job-1'), spec: {} } as unknown as WatchedObject;
    expect(scopeOfObject(c)).toEqual({ kind: 'namespace', namespace: 'ci' });
  });
});

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
