import { describe, expect, it } from 'vitest';
import { keys } from '../api/index.js';
import type { WatchedObject } from '../api/index.js';
import { disk, pool, vm } from '../../test/unit/builders.js';
import { scopeOfObject } from './scope.js';

describe('scopeOfObject: the pool a watched object belongs to', () => {
  const p = pool();
  const member = vm(p, 'runners-bcdfg');

  it('maps a pool to itself and a member to its controlling pool', () => {
    expect(scopeOfObject(p as WatchedObject)).toEqual({
      kind: 'pool',
      namespace: p.metadata.namespace,
      name: p.metadata.name,
      claims: false,
    });
    // Neither is a claim's event: a reconcile for it may skip reading claims.
    expect(scopeOfObject(member as WatchedObject)).toMatchObject({
      kind: 'pool',
      name: 'runners',
      claims: false,
    });
  });

  it('maps a Delete-policy disk, controlled by its VM, to the pool by its pool label', () => {
    const d = disk(p, 'runners-bcdfg-root', { template: 'root', owner: member });
    expect(d.metadata.ownerReferences?.[0]?.kind).toBe('VirtualMachine');
    expect(scopeOfObject(d as WatchedObject)).toEqual({
      kind: 'pool',
      namespace: p.metadata.namespace,
      name: p.metadata.name,
      claims: false,
    });
  });

  it('falls back to the whole namespace for a VM-controlled disk without a pool label', () => {
    const d = disk(p, 'runners-bcdfg-root', { template: 'root', owner: member });
    delete d.metadata.labels?.[keys.pool];
    expect(scopeOfObject(d as WatchedObject)).toEqual({
      kind: 'namespace',
      namespace: p.metadata.namespace,
    });
  });
});
