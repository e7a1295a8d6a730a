import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { at, disk, HOUR, pool, vm } from '../../../test/unit/builders.js';
import {
  byAge,
  conditionOf,
  isMember,
  isReady,
  isTerminating,
  membersOf,
  nameOf,
  ownedBy,
  selectorOf,
} from './membership.js';

const p = pool();

describe('membership', () => {
  it('selectorOf is pool-uid=<uid>', () => {
    expect(selectorOf(p)).toBe('vmpool.virtualization.deckhouse.io/pool-uid=pool-uid-1');
  });

  it.each([
    ['label and controller ownerRef', (v: ReturnType<typeof vm>) => v, true],
    [
      'label removed',
      (v: ReturnType<typeof vm>) => {
        delete v.metadata.labels![keys.poolUid];
        return v;
      },
      false,
    ],
    [
      'label of another pool',
      (v: ReturnType<typeof vm>) => {
        v.metadata.labels![keys.poolUid] = 'other';
        return v;
      },
      false,
    ],
    [
      'ownerRef not controller',
      (v: ReturnType<typeof vm>) => {
        v.metadata.ownerReferences![0]!.controller = false;
        return v;
      },
      false,
    ],
    [
      'controller of another uid',
      (v: ReturnType<typeof vm>) => {
        v.metadata.ownerReferences![0]!.uid = 'other';
        return v;
      },
      false,
    ],
    [
      'no ownerReferences',
      (v: ReturnType<typeof vm>) => {
        delete v.metadata.ownerReferences;
        return v;
      },
      false,
    ],
  ])('isMember: %s → %s', (_, edit, want) => {
    expect(isMember(p, edit(vm(p, 'runners-bbbbb')))).toBe(want);
  });

  it('ownedBy is false for an undefined pool uid', () => {
    expect(ownedBy(vm(p, 'a'), undefined)).toBe(false);
    expect(ownedBy(disk(p, 'd'), 'pool-uid-1')).toBe(true);
  });

  it('membersOf keeps Terminating and Stopped members, drops strangers', () => {
    const other = pool({ uid: 'other-uid', name: 'other' });
    const vms = [
      vm(p, 'a', { terminating: true }),
      vm(p, 'b', { phase: 'Stopped' }),
      vm(other, 'c'),
    ];
    expect(membersOf(p, vms).map(nameOf)).toEqual(['a', 'b']);
  });

  it.each([
    ['Running', false, true],
    ['Running', true, false],
    ['Migrating', false, false],
    ['Starting', false, false],
    ['Stopped', false, false],
    ['Degraded', false, false],
  ])('isReady(phase %s, terminating %s) = %s', (phase, terminating, want) => {
    const v = vm(p, 'a', { phase, terminating });
    expect(isReady(v)).toBe(want);
    expect(isTerminating(v)).toBe(terminating);
  });

  it('conditionOf finds a condition by type', () => {
    const v = vm(p, 'a', { conditions: [{ type: 'X', status: 'True' }] });
    expect(conditionOf(v, 'X')?.status).toBe('True');
    expect(conditionOf(v, 'Y')).toBeUndefined();
    expect(nameOf({ metadata: {} })).toBe('');
  });

  it('byAge orders by creationTimestamp, then by name', () => {
    const vms = [
      vm(p, 'c', { created: at(-HOUR) }),
      vm(p, 'b', { created: at(-HOUR) }),
      vm(p, 'a', { created: at(0) }),
      vm(p, 'z', { created: at(-2 * HOUR) }),
    ];
    expect(vms.sort(byAge).map(nameOf)).toEqual(['z', 'b', 'c', 'a']);
    expect(byAge(vm(p, 'x'), vm(p, 'x'))).toBe(0);
  });

  it('byAge breaks a same-second tie by the pool generation a member was planned at', () => {
    const t = at(-HOUR);
    const born = (g: string) => ({ created: t, annotations: { [keys.createdGeneration]: g } });
    const vms = [
      vm(p, 'a', born('12')),
      vm(p, 'b', born('3')),
      vm(p, 'c', { created: t }),
      vm(p, 'd', born('not-a-number')),
      vm(p, 'e', born('3')),
      vm(p, 'f', { created: at(-2 * HOUR), annotations: { [keys.createdGeneration]: '99' } }),
    ];
    // Older seconds still win; unstamped or garbled members count as the oldest of their second.
    expect(vms.sort(byAge).map(nameOf)).toEqual(['f', 'c', 'd', 'b', 'e', 'a']);
  });
});
