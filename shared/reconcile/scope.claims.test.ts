/**
 * Claim events: a claim reconciles the pool its spec.poolName names.
 */
import { describe, expect, it } from 'vitest';
import type { SourceEvent, WatchedObject } from '../api/index.js';
import { APISERVER_RESOURCE } from '../api/index.js';
import { claim } from '../../test/unit/claim-builders.js';
import { fakeKube } from '../../test/unit/fake-kube.js';
import { scopeOf, scopeOfObject } from './scope.js';

describe('a claim event', () => {
  it('maps to the pool its spec.poolName names, in its namespace, and has its claims read', async () => {
    const c = claim('job-1', { pool: 'gpu' });
    expect(scopeOfObject(c as WatchedObject)).toEqual({
      kind: 'pool',
      namespace: 'ci',
      name: 'gpu',
      claims: true,
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
      claims: true,
    });
  });

  it('without a readable poolName falls back to its namespace', () => {
    const c = { ...claim('job-1'), spec: {} } as unknown as WatchedObject;
    expect(scopeOfObject(c)).toEqual({ kind: 'namespace', namespace: 'ci' });
  });
});
