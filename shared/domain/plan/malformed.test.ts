import { describe, expect, it } from 'vitest';
import type { Malformed } from '../../api/index.js';
import { VirtualMachine, keys, malformedOf } from '../../api/index.js';
import { NOW, pool, vm } from '../../../test/unit/builders.js';
import { blockingCondition, blockedStatus, holdBlocked } from './blocked.js';
import {
  MALFORMED_MEMBER,
  claimedPools,
  heldByMalformed,
  malformedByPool,
  malformedMessage,
} from './malformed.js';

const runners = pool();
const other = pool({ name: 'other', namespace: 'ci', uid: 'pool-uid-2' });

/** What the funnel makes of an object its model refuses. */
function refused(raw: unknown, kind = 'VirtualMachine'): Malformed {
  const r = VirtualMachine.safeParse(raw);
  expect(r.success).toBe(false);
  return malformedOf(kind, raw, 'spec.runPolicy: Invalid option');
}

/** A member of `p` whose runPolicy only a newer platform knows. */
function futureMember(p: typeof runners, name: string): Malformed {
  const v = vm(p, name);
  return refused({ ...v, spec: { ...v.spec, runPolicy: 'SomeFutureMode' } });
}

describe('claimedPools', () => {
  it('claims the pool its pool-uid label names, and the pool its controller ownerReference names', () => {
    const m = futureMember(runners, 'runners-aaaaa');
    expect(claimedPools(m, [])).toEqual(['ci/pool-uid-1']);
    const relabelled: Malformed = { ...m, labels: { [keys.poolUid]: 'pool-uid-2' } };
    expect(claimedPools(relabelled, []).sort()).toEqual(['ci/pool-uid-1', 'ci/pool-uid-2']);
  });

  it("claims a member's pool for a disk the member controls, the member parsed or not", () => {
    const member = vm(runners, 'runners-aaaaa');
    const disk = refused(
      {
        metadata: {
          name: 'runners-aaaaa-root',
          namespace: 'ci',
          ownerReferences: [
            {
              apiVersion: 'v',
              kind: 'VirtualMachine',
              name: 'runners-aaaaa',
              uid: 'uid-runners-aaaaa',
              controller: true,
            },
          ],
        },
        spec: 'not an object',
      },
      'VirtualDisk',
    );
    expect(claimedPools(disk, [member])).toEqual(['ci/pool-uid-1']);
    const brokenMember = futureMember(runners, 'runners-aaaaa');
    expect(claimedPools(disk, [], [brokenMember])).toEqual(['ci/pool-uid-1']);
    // Neither the VM nor a label: nothing to claim, no pool stops.
    expect(claimedPools(disk, [])).toEqual([]);
  });

  it('an owner that is not the controller, or an empty label, claims nothing', () => {
    const m: Malformed = {
      ...futureMember(runners, 'runners-aaaaa'),
      labels: { [keys.poolUid]: '' },
      ownerReferences: [
        { apiVersion: 'v', kind: 'VirtualMachinePool', name: 'runners', uid: 'pool-uid-1' },
      ],
    };
    expect(claimedPools(m, [])).toEqual([]);
  });

  it('groups by pool, and a pool in another namespace with the same uid is another key', () => {
    const a = futureMember(runners, 'runners-aaaaa');
    const b = futureMember(runners, 'runners-bbbbb');
    const c = futureMember(other, 'other-ccccc');
    const elsewhere: Malformed = { ...c, namespace: 'ns2' };
    const by = malformedByPool([a, b, c, elsewhere], []);
    expect([...by.keys()].sort()).toEqual(['ci/pool-uid-1', 'ci/pool-uid-2', 'ns2/pool-uid-2']);
    expect(by.get('ci/pool-uid-1')?.map((m) => m.name)).toEqual(['runners-aaaaa', 'runners-bbbbb']);
  });
});

describe('MalformedMember', () => {
  it('names the object, its first issue and the fix', () => {
    const a = futureMember(runners, 'runners-aaaaa');
    const text = malformedMessage([a, futureMember(runners, 'runners-bbbbb')]);
    expect(text).toContain('VirtualMachine ci/runners-aaaaa (and 1 more)');
    expect(text).toContain('spec.runPolicy: Invalid option');
    expect(text).toContain('kubectl edit -n ci virtualmachine/runners-aaaaa');
    expect(text).toContain('creates and deletes nothing');
    expect(malformedMessage([])).toBe('');
  });

  it('is a blocking Synced=False: held while a plan would act, released when it would not', () => {
    const status = blockedStatus(runners, MALFORMED_MEMBER, 'm', NOW);
    expect(blockingCondition(status)?.reason).toBe(MALFORMED_MEMBER);
    const planned = { conditions: [{ type: 'Synced', status: 'True' as const, reason: 'Synced' }] };
    expect(holdBlocked(status, planned, true).conditions?.[0]?.reason).toBe(MALFORMED_MEMBER);
    expect(holdBlocked(status, planned, false).conditions?.[0]?.reason).toBe('Synced');
  });
});

describe('what VMs that do not parse may hold', () => {
  const raw = (spec: unknown, namespace = 'ci') => ({
    metadata: { name: 'x', namespace },
    ...(spec === undefined ? {} : { spec }),
  });

  it('reads disk references leniently: a kind it cannot read counts as a disk', () => {
    const refs = [
      { kind: 'VirtualDisk', name: 'a' },
      { kind: 'ClusterVirtualImage', name: 'iso' },
      { kind: 'VirtualImage', name: 'img' },
      { kind: 'SomeFutureKind', name: 'b' },
      { name: 'c' },
    ];
    expect(malformedOf('VirtualMachine', raw({ blockDeviceRefs: refs }), 'i').references).toEqual([
      'a',
      'b',
      'c',
    ]);
    expect(malformedOf('VirtualMachine', raw({}), 'i').references).toEqual([]);
    expect(malformedOf('VirtualMachine', raw(undefined), 'i').references).toEqual([]);
    // Unreadable: any disk of the namespace may be one of them.
    expect(
      malformedOf('VirtualMachine', raw({ blockDeviceRefs: 'a' }), 'i').references,
    ).toBeUndefined();
    expect(
      malformedOf('VirtualMachine', raw({ blockDeviceRefs: [{ kind: 'VirtualDisk' }] }), 'i')
        .references,
    ).toBeUndefined();
    expect(malformedOf('VirtualMachine', raw('not an object'), 'i').references).toBeUndefined();
    expect(malformedOf('VirtualDisk', raw({ blockDeviceRefs: 'a' }), 'i').references).toEqual([]);
  });

  it('holds the disks named, and whole namespaces for references it cannot read', () => {
    const named = malformedOf(
      'VirtualMachine',
      raw({ blockDeviceRefs: [{ kind: 'VirtualDisk', name: 'a' }] }),
      'i',
    );
    const blind = malformedOf('VirtualMachine', raw({ blockDeviceRefs: 7 }, 'ns2'), 'i');
    const disk = malformedOf('VirtualDisk', raw('x', 'ns3'), 'i');
    const held = heldByMalformed([named, blind, disk]);
    expect([...held.disks]).toEqual(['ci/a']);
    expect([...held.namespaces.keys()]).toEqual(['ns2']);
    expect(held.namespaces.get('ns2')).toEqual([blind]);
  });
});
