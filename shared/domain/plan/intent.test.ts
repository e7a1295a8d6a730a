import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../api/index.js';
import { pool as buildPool } from '../../../test/unit/builders.js';
import { createsStillIntended, normalizeIntent } from './intent.js';

describe('normalizeIntent', () => {
  it('drops empty lists and is undefined when nothing is pending', () => {
    expect(normalizeIntent({ creates: [], deletes: [], claims: [] })).toBeUndefined();
    const claims = [{ claim: 'c', claimUid: 'u', vm: 'v', vmUid: 'w' }];
    expect(normalizeIntent({ creates: [], claims })).toEqual({ claims });
  });

  it('keeps standby creates only among the creates', () => {
    expect(normalizeIntent({ creates: ['a', 'b'], standbyCreates: ['b', 'gone'] })).toEqual({
      creates: ['a', 'b'],
      standbyCreates: ['b'],
    });
    expect(normalizeIntent({ standbyCreates: ['b'] })).toBeUndefined();
  });
});

describe('createsStillIntended', () => {
  const planned = pool({ generation: 3, intent: ['a', 'b'] });
  const names = (p: VirtualMachinePool | undefined): string[] => [
    ...createsStillIntended(p, planned),
  ];

  it('is the fresh intent while the pool is the one planned for, with the same spec', () => {
    expect(names(planned)).toEqual(['a', 'b']);
    expect(names(pool({ generation: 3, intent: ['b'] }))).toEqual(['b']);
  });

  it('is empty once the pool is gone, Terminating, re-created, paused or given a new spec', () => {
    expect(names(undefined)).toEqual([]);
    const m = planned.metadata;
    expect(
      names({ ...planned, metadata: { ...m, deletionTimestamp: '2026-01-01T00:00:00Z' } }),
    ).toEqual([]);
    expect(names({ ...planned, metadata: { ...m, uid: 'other' } })).toEqual([]);
    expect(names({ ...planned, spec: { ...planned.spec, paused: true } })).toEqual([]);
    expect(names(pool({ generation: 4, intent: ['a', 'b'] }))).toEqual([]);
  });
});

function pool(o: { generation: number; intent: string[] }): VirtualMachinePool {
  const p = buildPool();
  return {
    ...p,
    metadata: { ...p.metadata, generation: o.generation },
    status: { intent: { creates: o.intent } },
  };
}
