import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { VirtualMachinePool } from '../../api/index.js';
import { AWAITING_RESTART, keys } from '../../api/index.js';
import type { Action } from './actions.js';
import { templateHash, ALPHABET } from '../formats/index.js';
import type { Plan } from './index.js';
import { plan } from './index.js';
import { CREATE_BURST } from '../fleet/index.js';
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
  vm,
} from '../../../test/unit/builders.js';

const rand = () => seededRandom(42);

const kinds = (pl: Plan) => pl.actions.map((a) => a.kind);
const of = <K extends Action['kind']>(pl: Plan, kind: K) =>
  pl.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);

/** Feeds a plan's status back into the pool, as the API server would store it. */
function stored(p: VirtualMachinePool, pl: Plan): VirtualMachinePool {
  return { ...p, status: pl.status };
}

describe('plan: scale up', () => {
  it('creates the deficit with names from the reference alphabet and records it as intent', () => {
    const p = pool({ replicas: 3 });
    const pl = plan({ pool: p, vms: [], disks: [] }, NOW, rand());
    const creates = of(pl, 'createVm');
    expect(creates).toHaveLength(3);
    for (const c of creates) {
      expect(c.vm.metadata.name).toMatch(new RegExp(`^runners-[${ALPHABET}]{5}$`));
    }
    expect(pl.status.intent?.creates).toEqual(creates.map((c) => c.vm.metadata.name));
    expect(pl.fenced).toBe(true);
    expect(pl.writeStatus).toBe(true);
  });

  it('stamps labels, the patched revision, the pool generation and a controller ownerReference on new members', () => {
    const p = pool({ replicas: 1, generation: 7 });
    const [c] = of(plan({ pool: p, vms: [], disks: [] }, NOW, rand()), 'createVm');
    const hash = templateHash(p.spec.virtualMachineTemplate);
    expect(c?.vm.metadata.labels).toMatchObject({
      [keys.poolUid]: 'pool-uid-1',
      [keys.pool]: 'runners',
      [keys.templateHash]: hash,
    });
    expect(c?.vm.metadata.annotations?.[keys.patchedTemplateHash]).toBe(hash);
    expect(c?.vm.metadata.annotations?.[keys.createdGeneration]).toBe('7');
    expect(c?.vm.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'VirtualMachinePool',
        uid: 'pool-uid-1',
        controller: true,
        blockOwnerDeletion: true,
      }),
    ]);
  });

  it('resolves disk placeholders in place: boot order kept, shared image untouched', () => {
    const p = pool({ replicas: 1 });
    const pl = plan({ pool: p, vms: [], disks: [] }, NOW, rand());
    const [c] = of(pl, 'createVm');
    const name = c?.vm.metadata.name ?? '';
    const refs = c?.vm.spec.blockDeviceRefs ?? [];
    expect(refs[0]).toEqual({ kind: 'VirtualDisk', name: `${name}-root` });
    expect(refs[1]?.name).toMatch(new RegExp(`^runners-cache-[${ALPHABET}]{6}$`));
    expect(refs[2]).toEqual({ kind: 'ClusterVirtualImage', name: 'tools-iso' });
  });

  it('keeps bootOrder of a placeholder when resolving it', () => {
    const p = pool({ replicas: 1 });
    const t = p.spec.virtualMachineTemplate.spec!;
    t.blockDeviceRefs = [
      { kind: 'ClusterVirtualImage', name: 'tools-iso', bootOrder: 2 },
      { kind: 'VirtualDisk', name: 'root', bootOrder: 1 },
      { kind: 'VirtualDisk', name: 'cache', bootOrder: 3 },
    ];
    const [c] = of(plan({ pool: p, vms: [], disks: [] }, NOW, rand()), 'createVm');
    const refs = c?.vm.spec.blockDeviceRefs ?? [];
    expect(refs.map((r) => r.bootOrder)).toEqual([2, 1, 3]);
    expect(refs[0]?.name).toBe('tools-iso');
    expect(refs[1]?.name).toBe(`${c?.vm.metadata.name ?? ''}-root`);
  });

  it('creates a Retain disk owned by the pool before the VM and a Delete disk owned by the VM after it', () => {
    const p = pool({ replicas: 1 });
    const pl = plan({ pool: p, vms: [], disks: [] }, NOW, rand());
    expect(kinds(pl)).toEqual(['createDisk', 'createVm', 'createDisk']);
    const [retain, del] = of(pl, 'createDisk');
    expect(retain?.disk.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachinePool',
      uid: 'pool-uid-1',
    });
    expect(retain?.ownerVm).toBeUndefined();
    expect(del?.disk.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'VirtualMachine' });
    expect(del?.ownerVm).toBe(of(pl, 'createVm')[0]?.vm.metadata.name);
    expect(del?.disk.metadata.labels).toMatchObject({
      [keys.diskTemplate]: 'root',
      [keys.poolUid]: 'pool-uid-1',
    });
    expect(del?.disk.spec.persistentVolumeClaim?.size).toBe('30Gi');
  });

  it('does not create again while recorded creates are not yet visible (L1 under lag)', () => {
    const p = pool({ replicas: 3 });
    const first = plan({ pool: p, vms: [], disks: [] }, NOW, rand());
    const second = plan({ pool: stored(p, first), vms: [], disks: [] }, NOW, seededRandom(7));
    expect(of(second, 'createVm').map((c) => c.vm.metadata.name)).toEqual(
      of(first, 'createVm').map((c) => c.vm.metadata.name),
    );
    expect(second.status.intent?.bindings).toEqual(first.status.intent?.bindings);
  });

  it('clears realized creates once the members are observed, with nothing else to do', () => {
    const p = pool({ replicas: 2 });
    const a = steady(p, 'runners-aaaaa');
    const b = steady(p, 'runners-bbbbb');
    const withIntent = {
      ...p,
      status: { intent: { creates: ['runners-aaaaa', 'runners-bbbbb'] } },
    };
    const pl = plan(observe(withIntent, [a, b]), NOW, rand());
    expect(pl.actions).toEqual([]);
    expect(pl.status.intent).toBeUndefined();
    expect(pl.writeStatus).toBe(true);
  });

  it('replaces a fully deleted replica under a fresh name', () => {
    const p = pool({ replicas: 3 });
    const members = [steady(p, 'runners-aaaaa'), steady(p, 'runners-bbbbb')];
    const pl = plan(observe(p, members), NOW, rand());
    const names = of(pl, 'createVm').map((c) => c.vm.metadata.name);
    expect(names).toHaveLength(1);
    expect(names[0]).not.toBe('runners-ccccc');
    expect(['runners-aaaaa', 'runners-bbbbb']).not.toContain(names[0]);
  });

  it('treats nil replicas as 0', () => {
    const p = pool();
    delete p.spec.replicas;
    const pl = plan({ pool: p, vms: [], disks: [] }, NOW, rand());
    expect(of(pl, 'createVm')).toHaveLength(0);
  });

  it('does the same thing for the same inputs and seed (concurrent reconciles agree)', () => {
    const p = pool({ replicas: 4 });
    const obs = observe(p, [steady(p, 'runners-aaaaa')]);
    expect(plan(obs, NOW, seededRandom(3))).toEqual(plan(obs, NOW, seededRandom(3)));
  });
});

describe('plan: steady state and member states', () => {
  it('makes no write and no action when converged (L5)', () => {
    const p = pool({ replicas: 2 });
    const obs = observe(p, [steady(p, 'runners-aaaaa'), steady(p, 'runners-bbbbb')]);
    const first = plan(obs, NOW, rand());
    const again = plan({ ...obs, pool: stored(p, first) }, new Date(NOW.getTime() + HOUR), rand());
    expect(again.actions).toEqual([]);
    expect(again.writeStatus).toBe(false);
    expect(again.fenced).toBe(false);
  });

  it('keeps a Stopped member: counted, not replaced, not ready', () => {
    const p = pool({ replicas: 2 });
    const pl = plan(
      observe(p, [steady(p, 'runners-aaaaa'), steady(p, 'runners-bbbbb', { phase: 'Stopped' })]),
      NOW,
      rand(),
    );
    expect(of(pl, 'createVm')).toHaveLength(0);
    expect(pl.status.replicas).toBe(2);
    expect(pl.status.readyReplicas).toBe(1);
    expect(pl.status.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'False',
      reason: 'InsufficientReadyReplicas',
      message: 'Only 1 of 2 replicas are ready.',
    });
  });

  it('counts a Terminating member toward replicas and does not replace it yet', () => {
    const p = pool({ replicas: 2 });
    const pl = plan(
      observe(p, [steady(p, 'runners-aaaaa'), steady(p, 'runners-bbbbb', { terminating: true })]),
      NOW,
      rand(),
    );
    expect(of(pl, 'createVm')).toHaveLength(0);
    expect(pl.status.replicas).toBe(2);
    expect(pl.status.conditions?.find((c) => c.type === 'Progressing')).toBeUndefined();
  });

  it('ignores VMs that carry the label but are controlled by something else', () => {
    const p = pool({ replicas: 1 });
    const stray = steady(p, 'runners-zzzzz');
    stray.vm.metadata.ownerReferences = [];
    const pl = plan(observe(p, [stray]), NOW, rand());
    expect(of(pl, 'createVm')).toHaveLength(1);
    expect(pl.actions.some((a) => a.kind === 'deleteVm')).toBe(false);
  });

  it('does nothing for a pool being deleted', () => {
    const p = pool({ replicas: 3, deletionTimestamp: at(0) });
    const pl = plan({ pool: p, vms: [], disks: [] }, NOW, rand());
    expect(pl.actions).toEqual([]);
    expect(pl.writeStatus).toBe(false);
  });

  it('reports Progressing while replicas differ from spec and the selector always', () => {
    const p = pool({ replicas: 3 });
    const pl = plan(observe(p, [steady(p, 'runners-aaaaa')]), NOW, rand());
    expect(pl.status.selector).toBe(`${keys.poolUid}=pool-uid-1`);
    expect(pl.status.conditions?.find((c) => c.type === 'Progressing')).toMatchObject({
      status: 'True',
      reason: 'ReplicasProgressing',
      message: 'Converging to 3 replicas (currently 1).',
    });
  });
});

describe('plan: scale down', () => {
  const ages = (p: VirtualMachinePool) => [
    steady(p, 'runners-old11', { created: at(-3 * HOUR) }),
    steady(p, 'runners-mid22', { created: at(-2 * HOUR) }),
    steady(p, 'runners-new33', { created: at(-1 * HOUR) }),
  ];
  it.each([
    ['NewestFirst', 1, ['runners-new33', 'runners-mid22']],
    ['OldestFirst', 1, ['runners-old11', 'runners-mid22']],
    ['NewestFirst', 2, ['runners-new33']],
    ['OldestFirst', 2, ['runners-old11']],
    ['Explicit', 1, []],
  ] as const)('%s to %i deletes %j', (policy, replicas, expected) => {
    const p = pool({ replicas, scaleDownPolicy: policy });
    const pl = plan(observe(p, ages(p)), NOW, rand());
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(expected);
    expect(of(pl, 'deleteVm').every((d) => d.uid === `uid-${d.name}`)).toBe(true);
    expect(pl.status.intent?.deletes?.map((d) => d.name) ?? []).toEqual(expected);
  });

  it('breaks creationTimestamp ties by name', () => {
    const p = pool({ replicas: 1, scaleDownPolicy: 'OldestFirst' });
    const same = at(-HOUR);
    const pl = plan(
      observe(p, [
        steady(p, 'runners-bbbbb', { created: same }),
        steady(p, 'runners-aaaaa', { created: same }),
      ]),
      NOW,
      rand(),
    );
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-aaaaa']);
  });

  it('scaling back down in the same second removes the members of the later scale-up', () => {
    const p = pool({ replicas: 2, generation: 3 });
    const same = at(-1000);
    const born = (g: number) => ({ [keys.createdGeneration]: String(g) });
    const pl = plan(
      observe(p, [
        steady(p, 'runners-aaaaa', { created: same, annotations: born(1) }),
        steady(p, 'runners-zzzzz', { created: same, annotations: born(1) }),
        steady(p, 'runners-bbbbb', { created: same, annotations: born(2) }),
        steady(p, 'runners-ccccc', { created: same, annotations: born(2) }),
      ]),
      NOW,
      rand(),
    );
    expect(
      of(pl, 'deleteVm')
        .map((d) => d.name)
        .sort(),
    ).toEqual(['runners-bbbbb', 'runners-ccccc']);
  });

  it('counts a Terminating member as already removed (desired 1 of {terminating, old, new})', () => {
    const p = pool({ replicas: 1 });
    const pl = plan(
      observe(p, [
        steady(p, 'runners-term1', { terminating: true, created: at(-5 * HOUR) }),
        steady(p, 'runners-old11', { created: at(-3 * HOUR) }),
        steady(p, 'runners-new33', { created: at(-1 * HOUR) }),
      ]),
      NOW,
      rand(),
    );
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-new33']);
  });

  it('re-issues a recorded victim and picks no other (a duplicate event deletes nothing more)', () => {
    const p = pool({
      replicas: 2,
      status: { intent: { deletes: [{ name: 'runners-old11', uid: 'uid-runners-old11' }] } },
    });
    const pl = plan(observe(p, ages(p)), NOW, rand());
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-old11']);
  });

  it('forgets a recorded victim once it is Terminating or gone', () => {
    const p = pool({
      replicas: 2,
      status: { intent: { deletes: [{ name: 'runners-new33', uid: 'uid-runners-new33' }] } },
    });
    const members = ages(p);
    members[2] = steady(p, 'runners-new33', { terminating: true });
    const pl = plan(observe(p, members), NOW, rand());
    expect(of(pl, 'deleteVm')).toEqual([]);
    expect(pl.status.intent).toBeUndefined();
  });

  it('does not delete a same-named newcomer recorded under another uid', () => {
    const p = pool({
      replicas: 3,
      status: { intent: { deletes: [{ name: 'runners-new33', uid: 'old-uid' }] } },
    });
    const pl = plan(observe(p, ages(p)), NOW, rand());
    expect(of(pl, 'deleteVm')).toEqual([]);
  });

  it('never deletes anonymously under Explicit, even far above desired', () => {
    const p = pool({ replicas: 0, scaleDownPolicy: 'Explicit' });
    const pl = plan(observe(p, ages(p)), NOW, rand());
    expect(of(pl, 'deleteVm')).toEqual([]);
    expect(pl.status.conditions?.find((c) => c.type === 'Progressing')?.status).toBe('True');
  });
});

describe('plan: scaledownwith targets', () => {
  const targets = (...t: string[]) => ({
    [keys.scaleDownTargets]: JSON.stringify(t.map((name) => ({ name, uid: `uid-${name}` }))),
  });

  it.each(['NewestFirst', 'OldestFirst', 'Explicit'] as const)(
    '%s: deletes exactly the targets first',
    (policy) => {
      const p = pool({
        replicas: 1,
        scaleDownPolicy: policy,
        annotations: targets('runners-aaaaa'),
      });
      const pl = plan(
        observe(p, [
          steady(p, 'runners-aaaaa', { created: at(-5 * HOUR) }),
          steady(p, 'runners-bbbbb'),
        ]),
        NOW,
        rand(),
      );
      expect(of(pl, 'deleteVm')).toEqual([
        { kind: 'deleteVm', name: 'runners-aaaaa', uid: 'uid-runners-aaaaa', why: 'target' },
      ]);
    },
  );

  it('drops targets from the pool once they are Terminating or gone', () => {
    const p = pool({ replicas: 1, annotations: targets('runners-aaaaa', 'runners-ccccc') });
    const pl = plan(
      observe(p, [steady(p, 'runners-aaaaa', { terminating: true }), steady(p, 'runners-bbbbb')]),
      NOW,
      rand(),
    );
    expect(of(pl, 'deleteVm')).toEqual([]);
    expect(of(pl, 'dropTargets')).toEqual([
      { kind: 'dropTargets', names: ['runners-aaaaa', 'runners-ccccc'] },
    ]);
  });

  it('a scale-up racing a scaledownwith deletes only the target and creates the rest', () => {
    const p = pool({ replicas: 4, annotations: targets('runners-aaaaa') });
    const pl = plan(
      observe(p, [steady(p, 'runners-aaaaa'), steady(p, 'runners-bbbbb')]),
      NOW,
      rand(),
    );
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-aaaaa']);
    expect(of(pl, 'createVm')).toHaveLength(2);
  });
});

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

describe('plan: Delete disks, placeholders, sizes, removed templates', () => {
  it('recreates a missing Delete disk of a live member, owned by that VM', () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa');
    const pl = plan({ pool: p, vms: [a.vm], disks: [a.disks[1]!] }, NOW, rand());
    const [c] = of(pl, 'createDisk');
    expect(c?.disk.metadata.name).toBe('runners-aaaaa-root');
    expect(c?.disk.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachine',
      uid: 'uid-runners-aaaaa',
    });
  });

  it('resolves the placeholders of a member made by the reference implementation', () => {
    const p = pool({ replicas: 1 });
    const hash = templateHash(p.spec.virtualMachineTemplate);
    const legacy = vm(p, 'runners-legcy', {
      labels: { [keys.templateHash]: hash },
      annotations: { [keys.patchedTemplateHash]: hash },
      refs: [
        { kind: 'VirtualDisk', name: 'root' },
        { kind: 'VirtualDisk', name: 'cache' },
        { kind: 'ClusterVirtualImage', name: 'tools-iso' },
      ],
    });
    const pl = plan({ pool: p, vms: [legacy], disks: [] }, NOW, rand());
    const [u] = of(pl, 'updateVm');
    const refs = u?.vm.spec.blockDeviceRefs?.map((r) => r.name) ?? [];
    expect(refs[0]).toBe('runners-legcy-root');
    expect(refs[1]).toMatch(new RegExp(`^runners-cache-[${ALPHABET}]{6}$`));
    expect(refs[2]).toBe('tools-iso');
    expect(u?.why).toEqual(['attach']);
    expect(of(pl, 'createDisk').map((c) => c.disk.metadata.name)).toContain('runners-legcy-root');
  });

  it('is idempotent: a member whose disks are attached gets no second reference', () => {
    const p = pool({ replicas: 1 });
    const pl = plan(observe(p, [steady(p, 'runners-aaaaa')]), NOW, rand());
    expect(of(pl, 'updateVm')).toEqual([]);
  });

  it.each([
    ['5Gi', '10Gi', '10Gi'],
    ['20Gi', '10Gi', undefined],
    ['10Gi', '10Gi', undefined],
  ])('a %s disk with a %s template becomes %s (grow only)', (have, want, expected) => {
    const p = pool({ replicas: 1 });
    p.spec.virtualDiskTemplates[1]!.spec.persistentVolumeClaim = { size: want };
    const a = steady(p, 'runners-aaaaa');
    a.disks[1]!.spec.persistentVolumeClaim = { size: have };
    const pl = plan(observe(p, [a]), NOW, rand());
    const grow = of(pl, 'updateDisk').find((u) => u.why.includes('grow'));
    expect(grow?.disk.spec.persistentVolumeClaim?.size).toBe(expected);
  });

  it('removing a template detaches its non-boot disk, and deletes it only once nothing references it', () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa', { cache: 'runners-cache-dropme' });
    p.spec.virtualDiskTemplates = [p.spec.virtualDiskTemplates[0]!];
    p.spec.virtualMachineTemplate.spec!.blockDeviceRefs = [{ kind: 'VirtualDisk', name: 'root' }];
    const pl = plan(observe(p, [a]), NOW, rand());
    const detach = of(pl, 'updateVm').find((u) => u.why.includes('detach'));
    expect(detach?.vm.spec.blockDeviceRefs?.map((r) => r.name)).toEqual([
      'runners-aaaaa-root',
      'tools-iso',
    ]);
    expect(of(pl, 'deleteDisk')).toEqual([]);
    const detached = {
      ...a,
      vm: { ...a.vm, spec: { ...a.vm.spec, blockDeviceRefs: detach?.vm.spec.blockDeviceRefs } },
    };
    const next = plan(observe(p, [detached]), NOW, rand());
    expect(of(next, 'deleteDisk')).toEqual([
      {
        kind: 'deleteDisk',
        name: 'runners-cache-dropme',
        uid: 'uid-runners-cache-dropme',
        resourceVersion: '1',
        why: 'removedTemplate',
      },
    ]);
  });

  it('keeps the boot disk of a removed template attached and warns', () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa');
    p.spec.virtualDiskTemplates = [p.spec.virtualDiskTemplates[1]!];
    p.spec.virtualMachineTemplate.spec!.blockDeviceRefs = [{ kind: 'VirtualDisk', name: 'cache' }];
    const pl = plan(observe(p, [a]), NOW, rand());
    expect(of(pl, 'deleteDisk')).toEqual([]);
    expect(pl.warnings[0]).toContain('runners-aaaaa-root');
  });

  it('deletes a free pool-owned disk once its template switched to Delete', () => {
    const p = pool({ replicas: 0 });
    p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Delete', keep: 0 };
    const pl = plan({ pool: p, vms: [], disks: [disk(p, 'runners-cache-oldret')] }, NOW, rand());
    expect(of(pl, 'deleteDisk').map((d) => [d.name, d.why])).toEqual([
      ['runners-cache-oldret', 'deletePolicy'],
    ]);
  });
});

describe('plan: template rollout', () => {
  const edited = (p: VirtualMachinePool): VirtualMachinePool => {
    const q = structuredClone(p);
    (q.spec.virtualMachineTemplate.spec as Record<string, unknown>).cpu = { cores: 4 };
    return q;
  };

  it('patches a lagging member in place, keeping its disks, without marking it updated yet', () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa');
    const q = edited(p);
    const pl = plan(observe(q, [a]), NOW, rand());
    const [u] = of(pl, 'updateVm');
    expect(u?.why).toEqual(['rollout']);
    expect((u?.vm.spec as Record<string, unknown>).cpu).toEqual({ cores: 4 });
    expect(u?.vm.spec.blockDeviceRefs).toEqual(a.vm.spec.blockDeviceRefs);
    expect(u?.vm.metadata.annotations?.[keys.patchedTemplateHash]).toBe(
      templateHash(q.spec.virtualMachineTemplate),
    );
    expect(u?.vm.metadata.labels?.[keys.templateHash]).toBe(
      templateHash(p.spec.virtualMachineTemplate),
    );
    expect(pl.status.updatedReplicas).toBe(0);
    expect(pl.status.conditions?.find((c) => c.type === 'Synced')).toMatchObject({
      status: 'False',
      reason: 'RolloutInProgress',
      message: '0 of 1 replicas are on the current virtualMachineTemplate.',
    });
  });

  it('marks a patched member updated once no restart is pending', () => {
    const q = edited(pool({ replicas: 1 }));
    const a = steady(q, 'runners-aaaaa', { labels: { [keys.templateHash]: 'old' } });
    const [u] = of(plan(observe(q, [a]), NOW, rand()), 'updateVm');
    expect(u?.why).toEqual(['advance']);
    expect(u?.vm.metadata.labels?.[keys.templateHash]).toBe(
      templateHash(q.spec.virtualMachineTemplate),
    );
  });

  it('keeps the old revision label and counts restart-pending while a restart is awaited', () => {
    const q = edited(pool({ replicas: 1 }));
    const a = steady(q, 'runners-aaaaa', {
      labels: { [keys.templateHash]: 'old' },
      conditions: [{ type: AWAITING_RESTART, status: 'True', reason: 'ChangesPendingRestart' }],
    });
    const pl = plan(observe(q, [a]), NOW, rand());
    expect(of(pl, 'updateVm')).toEqual([]);
    expect(pl.status.restartPendingReplicas).toBe(1);
    expect(pl.status.conditions?.find((c) => c.type === 'Synced')).toMatchObject({
      reason: 'RestartPendingApproval',
      message: '1 of 1 replicas await a restart to apply configuration.',
    });
  });

  it('waits until the VM controller has observed the patch before marking it updated', () => {
    const q = edited(pool({ replicas: 1 }));
    const a = steady(q, 'runners-aaaaa', {
      labels: { [keys.templateHash]: 'old' },
      generation: 3,
      observedGeneration: 2,
    });
    expect(of(plan(observe(q, [a]), NOW, rand()), 'updateVm')).toEqual([]);
  });

  it('does not roll out to Terminating members', () => {
    const q = edited(pool({ replicas: 1 }));
    const pl = plan(
      observe(q, [
        steady(q, 'runners-aaaaa', {
          terminating: true,
          annotations: { [keys.patchedTemplateHash]: 'old' },
        }),
      ]),
      NOW,
      rand(),
    );
    expect(of(pl, 'updateVm')).toEqual([]);
  });

  it('a stable member gets no write', () => {
    const p = pool({ replicas: 1 });
    expect(of(plan(observe(p, [steady(p, 'runners-aaaaa')]), NOW, rand()), 'updateVm')).toEqual([]);
  });
});

describe('plan: laws as properties', () => {
  const memberArb = fc.record({
    terminating: fc.boolean(),
    stopped: fc.boolean(),
    age: fc.integer({ min: 0, max: 5 }),
  });
  const scenario = fc.record({
    members: fc.array(memberArb, { maxLength: 8 }),
    replicas: fc.integer({ min: 0, max: 10 }),
    policy: fc.constantFrom('NewestFirst', 'OldestFirst', 'Explicit' as const),
    freeDisks: fc.integer({ min: 0, max: 4 }),
    seed: fc.integer(),
  });

  it('L1/L2/L3: never more creates than the deficit, victims only among candidates, no disk bound twice', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const p = pool({ replicas: s.replicas, scaleDownPolicy: s.policy });
        const members = s.members.map((m, i) =>
          steady(p, `runners-m${i}abc`, {
            terminating: m.terminating,
            phase: m.stopped ? 'Stopped' : 'Running',
            created: at(-m.age * HOUR),
          }),
        );
        const free = Array.from({ length: s.freeDisks }, (_, i) =>
          disk(p, `runners-cache-free${i}x`, { freeSince: at(-i * MINUTE) }),
        );
        const pl = plan(observe(p, members, free), NOW, seededRandom(s.seed));
        const count = members.length;
        const creates = of(pl, 'createVm').length;
        expect(creates).toBeLessThanOrEqual(Math.max(0, s.replicas - count));
        const candidates = new Set(
          members.filter((m) => !m.vm.metadata.deletionTimestamp).map((m) => m.vm.metadata.name),
        );
        const victims = of(pl, 'deleteVm');
        for (const v of victims) expect(candidates.has(v.name)).toBe(true);
        if (s.policy === 'Explicit') expect(victims).toEqual([]);
        expect(victims.length).toBeLessThanOrEqual(Math.max(0, count - s.replicas));
        const bound = (pl.status.intent?.bindings ?? []).map((b) => b.disk);
        expect(new Set(bound).size).toBe(bound.length);
        const held = new Set(
          members
            .filter((m) => !m.vm.metadata.deletionTimestamp)
            .flatMap((m) => m.disks.map((d) => d.metadata.name)),
        );
        for (const b of bound) expect(held.has(b)).toBe(false);
        for (const d of of(pl, 'deleteDisk')) expect(held.has(d.name)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('L1: re-planning on the stored status never adds creates beyond the deficit', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer(),
        (have, want, seed) => {
          const p = pool({ replicas: want });
          const members = Array.from({ length: have }, (_, i) => steady(p, `runners-h${i}abc`));
          const first = plan(observe(p, members), NOW, seededRandom(seed));
          const second = plan(observe(stored(p, first), members), NOW, seededRandom(seed + 1));
          const names = new Set(
            [...of(first, 'createVm'), ...of(second, 'createVm')].map((c) => c.vm.metadata.name),
          );
          expect(names.size).toBe(Math.max(0, want - have));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('a mistaken scale taken back (L1 at each instant)', () => {
  /** A pool whose members have only Delete disks: no Retain disk is recorded for a create. */
  const deleteOnly = (replicas: number) => {
    const p = pool({ replicas });
    p.spec.virtualDiskTemplates = p.spec.virtualDiskTemplates.filter(
      (t) => t.reclaim?.onScaleDown !== 'Retain',
    );
    return p;
  };

  it('a scale to 100,000 records one burst; taken back to 1, the next pass drops it and creates nothing', () => {
    const p = deleteOnly(100_000);
    const m = steady(p, 'runners-aaaaa');
    const first = plan(observe(p, [m]), NOW, rand());
    expect(of(first, 'createVm')).toHaveLength(CREATE_BURST);
    expect(first.status.intent?.creates).toHaveLength(CREATE_BURST);
    const back = { ...stored(p, first), spec: { ...p.spec, replicas: 1 } };
    const next = plan(observe(back, [m]), NOW, rand());
    expect(of(next, 'createVm')).toEqual([]);
    expect(next.status.intent).toBeUndefined();
    // The burst under way landed 300 of its creates before the pass: they are the surplus now.
    const landed = first.status.intent!.creates!.slice(0, 300).map((n) => steady(p, n));
    const after = plan(observe(back, [m, ...landed]), NOW, rand());
    expect(of(after, 'createVm')).toEqual([]);
    expect(of(after, 'deleteVm')).toHaveLength(300);
  });

  it('creates with a Retain disk recorded for them are kept (L3) but never added to', () => {
    const p = pool({ replicas: 1_000 });
    const m = steady(p, 'runners-aaaaa');
    const first = plan(observe(p, [m]), NOW, rand());
    expect(first.status.intent?.bindings).toHaveLength(CREATE_BURST);
    const back = { ...stored(p, first), spec: { ...p.spec, replicas: 1 } };
    const next = plan(observe(back, [m]), NOW, rand());
    // Another reconcile may be making them: their disks stay theirs; nothing fresh is recorded.
    expect(next.status.intent?.creates).toEqual(first.status.intent?.creates);
    expect(next.status.intent?.bindings).toEqual(first.status.intent?.bindings);
  });

  it('a pool deleted while a burst is recorded does nothing more', () => {
    const p = pool({ replicas: 2_000 });
    const first = plan(observe(p, []), NOW, rand());
    const gone = { ...stored(p, first), metadata: { ...p.metadata, deletionTimestamp: at(0) } };
    expect(plan(observe(gone, []), NOW, rand()).actions).toEqual([]);
  });
});
