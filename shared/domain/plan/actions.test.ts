import { describe, expect, it } from 'vitest';
import { disk, pool, vm } from '../../../test/unit/builders.js';
import type { Action, VmUpdateWhy } from './actions.js';
import { isFenced, isGate, resourceVersionOf } from './actions.js';

const p = pool();
const m = vm(p, 'runners-aaaaa');
const d = disk(p, 'runners-cache-aaaaab');
const update = (...why: VmUpdateWhy[]): Action => ({ kind: 'updateVm', vm: m, why });

describe('isFenced', () => {
  it('fences creates, deletes, claims and the updates that decide who leaves or changes side', () => {
    const fenced: Action[] = [
      { kind: 'createVm', vm: m },
      { kind: 'createDisk', disk: d },
      { kind: 'claimDisk', disk: d, forVm: 'runners-aaaaa' },
      { kind: 'deleteVm', name: 'runners-aaaaa', uid: 'u', why: 'scaleDown' },
      {
        kind: 'deleteDisk',
        name: 'runners-cache-aaaaab',
        uid: 'u',
        resourceVersion: '1',
        why: 'gc',
      },
      update('drainRequest'),
      update('drainCancel'),
      update('promote'),
      update('rollout', 'toStandby'),
    ];
    expect(fenced.filter((a) => !isFenced(a))).toEqual([]);
  });

  it('leaves rollout patches, disk updates and standby state changes unfenced', () => {
    const free: Action[] = [
      update('rollout'),
      update('attach', 'detach'),
      update('standbyState'),
      { kind: 'updateDisk', disk: d, why: ['freeSince'] },
    ];
    expect(free.filter(isFenced)).toEqual([]);
  });
});

describe('isGate', () => {
  it('is a claim or a promotion: what later actions of the pass depend on', () => {
    expect(isGate({ kind: 'claimDisk', disk: d, forVm: 'runners-aaaaa' })).toBe(true);
    expect(isGate(update('promote'))).toBe(true);
    expect(isGate(update('toStandby'))).toBe(false);
    expect(isGate({ kind: 'createVm', vm: m })).toBe(false);
  });
});

describe('resourceVersionOf', () => {
  it('carries a read object resourceVersion, and nothing for an object not read or without one', () => {
    expect(resourceVersionOf(d)).toEqual({ resourceVersion: '1' });
    expect(resourceVersionOf(undefined)).toEqual({});
    expect(resourceVersionOf(m)).toEqual({});
  });
});
