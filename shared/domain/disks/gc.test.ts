import { describe, expect, it } from 'vitest';
import type { VirtualDisk, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  at,
  disk,
  HOUR,
  MINUTE,
  NOW,
  vm,
  poolWithReclaim as poolWith,
  ttl30Pool as ttl30,
  collectedNames as names,
} from '../../../test/unit/builders.js';
import { planGc } from './gc.js';

describe('planGc', () => {
  it('collects a free disk 1h old with ttl 30m and keep 0, with its preconditions', () => {
    const d = disk(ttl30, 'runners-cache-bbbbbb', { freeSince: at(-HOUR), rv: '42' });
    expect(planGc([ttl30], [], [d], NOW)).toEqual({
      collect: [
        {
          namespace: 'ci',
          name: 'runners-cache-bbbbbb',
          uid: 'uid-runners-cache-bbbbbb',
          resourceVersion: '42',
          pool: 'runners',
          freeForMs: HOUR,
        },
      ],
      nextWakeMs: undefined,
    });
  });

  it('keeps a disk free for 20m with ttl 30m and wakes in about 10m', () => {
    const d = disk(ttl30, 'runners-cache-bbbbbb', { freeSince: at(-20 * MINUTE) });
    expect(planGc([ttl30], [], [d], NOW)).toEqual({ collect: [], nextWakeMs: 10 * MINUTE });
  });

  it('wakes for the soonest of several disks, at least one second ahead', () => {
    const disks = [
      disk(ttl30, 'runners-cache-bbbbbb', { freeSince: at(-20 * MINUTE) }),
      disk(ttl30, 'runners-cache-cccccc', { freeSince: at(-25 * MINUTE) }),
      disk(ttl30, 'runners-cache-dddddd', { freeSince: at(-30 * MINUTE) }),
    ];
    const plan = planGc([ttl30], [], disks, NOW);
    expect(plan.collect).toEqual([]); // exactly ttl old is not yet past it
    expect(plan.nextWakeMs).toBe(1000);
  });

  it('never collects when ttl is unset, even after 100h', () => {
    const p = poolWith({ onScaleDown: 'Retain', keep: 0 });
    const d = disk(p, 'runners-cache-bbbbbb', { freeSince: at(-100 * HOUR) });
    expect(planGc([p], [], [d], NOW)).toEqual({ collect: [], nextWakeMs: undefined });
  });

  it('keep=1 protects the most recently freed disk, collects older ones', () => {
    const p = poolWith({ onScaleDown: 'Retain', keep: 1, ttl: '30m' });
    const disks = [
      disk(p, 'runners-cache-oldest', { freeSince: at(-3 * HOUR) }),
      disk(p, 'runners-cache-newest', { freeSince: at(-HOUR) }),
      disk(p, 'runners-cache-middle', { freeSince: at(-2 * HOUR) }),
    ];
    expect(names(planGc([p], [], disks, NOW)).sort()).toEqual([
      'runners-cache-middle',
      'runners-cache-oldest',
    ]);
  });

  it('breaks free-since ties by name when choosing the kept disks', () => {
    const p = poolWith({ onScaleDown: 'Retain', keep: 1, ttl: '30m' });
    const disks = [
      disk(p, 'runners-cache-zzzzzz', { freeSince: at(-HOUR) }),
      disk(p, 'runners-cache-bbbbbb', { freeSince: at(-HOUR) }),
    ];
    expect(names(planGc([p], [], disks, NOW))).toEqual(['runners-cache-zzzzzz']);
  });

  it('Failed disks do not fill keep slots: the next reusable disk stays warm', () => {
    const p = poolWith({ onScaleDown: 'Retain', keep: 1, ttl: '30m' });
    const disks = [
      disk(p, 'runners-cache-failed', { freeSince: at(-HOUR), phase: 'Failed' }),
      disk(p, 'runners-cache-ready1', { freeSince: at(-2 * HOUR) }),
      disk(p, 'runners-cache-ready2', { freeSince: at(-3 * HOUR) }),
    ];
    expect(names(planGc([p], [], disks, NOW)).sort()).toEqual([
      'runners-cache-failed',
      'runners-cache-ready2',
    ]);
  });

  it.each<
    [
      string,
      (
        p: VirtualMachinePool,
        d: VirtualDisk,
      ) => { vms?: ReturnType<typeof vm>[]; p?: VirtualMachinePool; d?: VirtualDisk },
    ]
  >([
    [
      'unstamped (the reconcile stamps it first)',
      (_, d) => {
        delete d.metadata.annotations;
        return {};
      },
    ],
    [
      'with an unparsable stamp',
      (_, d) => {
        d.metadata.annotations = { [keys.freeSince]: 'yesterday' };
        return {};
      },
    ],
    [
      'referenced by a live member',
      (p, d) => ({
        vms: [vm(p, 'runners-aaaaa', { refs: [{ kind: 'VirtualDisk', name: d.metadata.name! }] })],
      }),
    ],
    [
      'bound by the pool intent',
      (p, d) => ({
        p: {
          ...p,
          status: {
            intent: {
              bindings: [{ vm: 'runners-new11', template: 'cache', disk: d.metadata.name! }],
            },
          },
        },
      }),
    ],
    [
      'being deleted',
      (_, d) => {
        d.metadata.deletionTimestamp = at(0);
        return {};
      },
    ],
    [
      'of a pool being deleted',
      (p) => ({ p: { ...p, metadata: { ...p.metadata, deletionTimestamp: at(0) } } }),
    ],
    ['of an unknown pool', (p) => ({ p: { ...p, metadata: { ...p.metadata, uid: 'gone' } } })],
    [
      'without the pool-uid label',
      (_, d) => {
        delete d.metadata.labels![keys.poolUid];
        return {};
      },
    ],
    [
      'owned by a VM (a Delete-policy disk)',
      (p, d) => {
        d.metadata.ownerReferences![0]!.kind = 'VirtualMachine';
        d.metadata.ownerReferences![0]!.uid = 'uid-vm';
        return {};
      },
    ],
    [
      'of a Delete template',
      (_, d) => {
        d.metadata.labels![keys.diskTemplate] = 'root';
        return {};
      },
    ],
    [
      'of a removed template',
      (_, d) => {
        d.metadata.labels![keys.diskTemplate] = 'gone';
        return {};
      },
    ],
  ])('never collects a disk %s', (_, edit) => {
    const d = disk(ttl30, 'runners-cache-bbbbbb', { freeSince: at(-10 * HOUR) });
    const r = edit(ttl30, d);
    expect(planGc([r.p ?? ttl30], r.vms ?? [], [r.d ?? d], NOW).collect).toEqual([]);
  });

  it('ignores an invalid ttl instead of collecting', () => {
    const p = poolWith({ onScaleDown: 'Retain', keep: 0, ttl: '1d' });
    const d = disk(p, 'runners-cache-bbbbbb', { freeSince: at(-100 * HOUR) });
    expect(planGc([p], [], [d], NOW).collect).toEqual([]);
  });

  it('handles several pools independently', () => {
    const other = poolWith(
      { onScaleDown: 'Retain', keep: 1, ttl: '1h' },
      { name: 'other', uid: 'other-uid', namespace: 'ns2' },
    );
    const disks = [
      disk(ttl30, 'runners-cache-bbbbbb', { freeSince: at(-HOUR) }),
      disk(other, 'other-cache-bbbbbb', { freeSince: at(-5 * HOUR) }),
      disk(other, 'other-cache-cccccc', { freeSince: at(-6 * HOUR) }),
    ];
    const plan = planGc([ttl30, other], [], disks, NOW);
    expect(plan.collect.map((c) => [c.pool, c.namespace, c.name])).toEqual([
      ['runners', 'ci', 'runners-cache-bbbbbb'],
      ['other', 'ns2', 'other-cache-cccccc'],
    ]);
  });

  it("never collects a disk outside its pool's namespace (an ownerReference cannot cross one)", () => {
    const d = disk(ttl30, 'runners-cache-bbbbbb', { freeSince: at(-HOUR) });
    const elsewhere = { ...d, metadata: { ...d.metadata, namespace: 'other' } };
    expect(planGc([ttl30], [], [elsewhere], NOW).collect).toEqual([]);
    expect(names(planGc([ttl30], [], [d], NOW))).toEqual(['runners-cache-bbbbbb']);
  });

  it('a VM of another pool naming the disk keeps it (L3: any VM), one in another namespace does not', () => {
    const other = poolWith(
      { onScaleDown: 'Retain', keep: 0, ttl: '30m' },
      { name: 'other', uid: 'other-uid' },
    );
    const d = disk(ttl30, 'runners-cache-bbbbbb', { freeSince: at(-HOUR) });
    const stranger = vm(other, 'other-aaaaa', {
      refs: [{ kind: 'VirtualDisk', name: 'runners-cache-bbbbbb' }],
    });
    const afar = { ...stranger, metadata: { ...stranger.metadata, namespace: 'elsewhere' } };
    expect(planGc([ttl30, other], [stranger], [d], NOW).collect).toEqual([]);
    expect(names(planGc([ttl30, other], [afar], [d], NOW))).toEqual(['runners-cache-bbbbbb']);
  });
});
