import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { ALPHABET } from '../formats/index.js';
import { plan } from './index.js';
import {
  HOUR,
  MINUTE,
  NOW,
  at,
  disk,
  observed as observe,
  pool,
  seededRandom,
  steady,
  actionsOf as of,
  actionKinds as kinds,
  rand42 as rand,
} from '../../../test/unit/builders.js';

describe('plan: Retain disks', () => {
  it('reuses a free Ready disk instead of creating one, claiming it first', () => {
    const p = pool({ replicas: 2 });
    const free = disk(p, 'runners-cache-zzzzzz', { freeSince: at(-10 * MINUTE) });
    const pl = plan(observe(p, [steady(p, 'runners-aaaaa')], [free]), NOW, rand());
    expect(kinds(pl)[0]).toBe('claimDisk');
    const [claim] = of(pl, 'claimDisk');
    expect(claim?.disk.metadata.annotations?.[keys.freeSince]).toBeUndefined();
    expect(claim?.disk.metadata.resourceVersion).toBe('1');
    const vmRefs = of(pl, 'createVm')[0]?.vm.spec.blockDeviceRefs?.map((r) => r.name);
    expect(vmRefs?.[1]).toBe('runners-cache-zzzzzz');
    expect(
      of(pl, 'createDisk').filter((c) => c.disk.metadata.labels?.[keys.diskTemplate] === 'cache'),
    ).toEqual([]);
    expect(pl.status.intent?.bindings).toEqual([
      { vm: claim?.forVm, template: 'cache', disk: 'runners-cache-zzzzzz' },
    ]);
  });

  it('prefers Ready, then the most recently freed, then by name', () => {
    const p = pool({ replicas: 2 });
    const disks = [
      disk(p, 'runners-cache-pppppp', { phase: 'Pending', freeSince: at(-1 * MINUTE) }),
      disk(p, 'runners-cache-oooold', { freeSince: at(-50 * MINUTE) }),
      disk(p, 'runners-cache-warmmm', { freeSince: at(-5 * MINUTE) }),
    ];
    const pl = plan(observe(p, [steady(p, 'runners-aaaaa')], disks), NOW, rand());
    expect(of(pl, 'claimDisk').map((c) => c.disk.metadata.name)).toEqual(['runners-cache-warmmm']);
  });

  it('reuses a free Pending disk rather than creating another', () => {
    const p = pool({ replicas: 2 });
    const pl = plan(
      observe(
        p,
        [steady(p, 'runners-aaaaa')],
        [disk(p, 'runners-cache-pppppp', { phase: 'Pending' })],
      ),
      NOW,
      rand(),
    );
    expect(of(pl, 'createVm')[0]?.vm.spec.blockDeviceRefs?.[1]?.name).toBe('runners-cache-pppppp');
  });

  it.each([
    ['Failed', { phase: 'Failed' }],
    ['being deleted', { terminating: true }],
  ] as const)('never reuses a %s disk', (_label, opts) => {
    const p = pool({ replicas: 2 });
    const pl = plan(
      observe(p, [steady(p, 'runners-aaaaa')], [disk(p, 'runners-cache-badddd', opts)]),
      NOW,
      rand(),
    );
    const ref = of(pl, 'createVm')[0]?.vm.spec.blockDeviceRefs?.[1]?.name;
    expect(ref).not.toBe('runners-cache-badddd');
    expect(of(pl, 'claimDisk')).toEqual([]);
  });

  it('never gives a disk a live member holds to a newcomer', () => {
    const p = pool({ replicas: 2 });
    const a = steady(p, 'runners-aaaaa', { cache: 'runners-cache-heldby' });
    const pl = plan(observe(p, [a]), NOW, rand());
    expect(of(pl, 'createVm')[0]?.vm.spec.blockDeviceRefs?.[1]?.name).not.toBe(
      'runners-cache-heldby',
    );
  });

  it('gives one free disk to one of two newcomers only', () => {
    const p = pool({ replicas: 2 });
    const pl = plan(
      { pool: p, vms: [], disks: [disk(p, 'runners-cache-onlyyy', { freeSince: at(-MINUTE) })] },
      NOW,
      rand(),
    );
    const caches = of(pl, 'createVm').map((c) => c.vm.spec.blockDeviceRefs?.[1]?.name);
    expect(caches.filter((c) => c === 'runners-cache-onlyyy')).toHaveLength(1);
    expect(new Set(caches).size).toBe(2);
  });

  it('never reuses a disk bound by recorded intent to a pending create', () => {
    const p = pool({
      replicas: 2,
      status: {
        intent: {
          creates: ['runners-pend1'],
          bindings: [{ vm: 'runners-pend1', template: 'cache', disk: 'runners-cache-boundd' }],
        },
      },
    });
    const pl = plan({ pool: p, vms: [], disks: [disk(p, 'runners-cache-boundd')] }, NOW, rand());
    const refs = of(pl, 'createVm').map((c) => [
      c.vm.metadata.name,
      c.vm.spec.blockDeviceRefs?.[1]?.name,
    ]);
    expect(refs).toContainEqual(['runners-pend1', 'runners-cache-boundd']);
    expect(refs.filter(([, d]) => d === 'runners-cache-boundd')).toHaveLength(1);
  });

  it('drops a pending create whose name a VM outside the pool holds, and creates another name', () => {
    const p = pool({
      replicas: 1,
      status: {
        intent: {
          creates: ['runners-takn1'],
          bindings: [{ vm: 'runners-takn1', template: 'cache', disk: 'runners-cache-boundd' }],
        },
      },
    });
    const pl = plan(
      {
        pool: p,
        vms: [],
        disks: [disk(p, 'runners-cache-boundd')],
        foreign: new Set(['runners-takn1']),
      },
      NOW,
      rand(),
    );
    const names = of(pl, 'createVm').map((c) => c.vm.metadata.name);
    expect(names).toHaveLength(1);
    expect(names).not.toContain('runners-takn1');
    expect(pl.status.intent?.creates).toEqual(names);
    // The disk bound to the dropped name is free again: the newcomer may take it.
    expect(pl.status.intent?.bindings).toEqual([
      { vm: names[0], template: 'cache', disk: 'runners-cache-boundd' },
    ]);
    expect(pl.fenced).toBe(true);
    expect(pl.warnings).toEqual([
      "VirtualMachine runners-takn1 exists and is not the pool's: creating another name",
    ]);
  });

  it('never picks a foreign name for a fresh create', () => {
    const p = pool({ replicas: 1 });
    // The same draws would give the same name: taken by a foreign VM, another one is picked.
    const first = of(plan({ pool: p, vms: [], disks: [] }, NOW, seededRandom(3)), 'createVm')[0];
    const name = first?.vm.metadata.name ?? '';
    const pl = plan(
      { pool: p, vms: [], disks: [], foreign: new Set([name]) },
      NOW,
      seededRandom(3),
    );
    const [again] = of(pl, 'createVm').map((c) => c.vm.metadata.name);
    expect(again).not.toBe(name);
    expect(again).toMatch(new RegExp(`^${name.slice(0, -5)}[${ALPHABET}]{5}$`));
  });

  it('stamps free-since on a newly free disk and clears it on a used one', () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa', { cache: 'runners-cache-usedup' });
    a.disks[1]!.metadata.annotations = { [keys.freeSince]: at(-HOUR) };
    const pl = plan(observe(p, [a], [disk(p, 'runners-cache-freeee')]), NOW, rand());
    const updates: Record<string, (typeof ups)[number]> = {};
    const ups = of(pl, 'updateDisk');
    for (const u of ups) updates[u.disk.metadata.name ?? ''] = u;
    expect(updates['runners-cache-freeee']?.disk.metadata.annotations?.[keys.freeSince]).toBe(
      '2025-01-01T12:00:00Z',
    );
    expect(updates['runners-cache-freeee']?.why).toEqual(['freeSince']);
    expect(
      updates['runners-cache-usedup']?.disk.metadata.annotations?.[keys.freeSince],
    ).toBeUndefined();
    expect(updates['runners-cache-usedup']?.why).toEqual(['inUse']);
  });

  it('treats the Retain disk of a Terminating member as in use until it is gone (L3)', () => {
    const p = pool({ replicas: 3 });
    const leaving = steady(p, 'runners-gonee', {
      terminating: true,
      cache: 'runners-cache-leavng',
    });
    const pl = plan(observe(p, [steady(p, 'runners-aaaaa'), leaving]), NOW, rand());
    // The one create gets a new cache disk: the held one is neither bound nor stamped free.
    expect(of(pl, 'createVm')).toHaveLength(1);
    expect(of(pl, 'claimDisk')).toEqual([]);
    expect(pl.status.intent?.bindings?.map((b) => b.disk)).not.toContain('runners-cache-leavng');
    expect(of(pl, 'updateDisk').map((u) => u.disk.metadata.name)).not.toContain(
      'runners-cache-leavng',
    );
  });

  it('recreates a Retain disk a live member references but that vanished, under the same name', () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa', { cache: 'runners-cache-vnshbb' });
    const pl = plan({ pool: p, vms: [a.vm], disks: [a.disks[0]!] }, NOW, rand());
    expect(of(pl, 'createDisk').map((c) => c.disk.metadata.name)).toEqual(['runners-cache-vnshbb']);
  });

  it('hands a disk two members reference to one (BlockDevicesReady first) and rebinds the other in place', () => {
    const p = pool({ replicas: 2 });
    const a = steady(p, 'runners-aaaaa', { cache: 'runners-cache-shared' });
    const b = steady(p, 'runners-bbbbb', {
      cache: 'runners-cache-shared',
      conditions: [{ type: 'BlockDevicesReady', status: 'True', reason: 'BlockDevicesReady' }],
    });
    const pl = plan({ pool: p, vms: [a.vm, b.vm], disks: [...a.disks, b.disks[0]!] }, NOW, rand());
    const updates = of(pl, 'updateVm');
    expect(updates.map((u) => u.vm.metadata.name)).toEqual(['runners-aaaaa']);
    const refs = updates[0]?.vm.spec.blockDeviceRefs ?? [];
    expect(refs[1]?.name).not.toBe('runners-cache-shared');
    expect(refs[1]?.name).toMatch(/^runners-cache-/);
    expect(refs).toHaveLength(3);
  });
});
