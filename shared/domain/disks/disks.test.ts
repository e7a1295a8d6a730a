import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { BlockDeviceRef, DiskTemplate, VirtualDisk } from '../../api/index.js';
import { API_VERSION, keys } from '../../api/index.js';
import {
  at,
  disk,
  HOUR,
  MINUTE,
  pool,
  runnersDiskTemplates,
  vm,
} from '../../../test/unit/builders.js';
import {
  diskRefs,
  diskSize,
  freedAt,
  newDisk,
  placeRef,
  policyOf,
  poolOwned,
  resolveRefs,
  reusable,
  slotsOf,
  rankFree,
} from './disks.js';
import { nameOf } from '../fleet/index.js';

const p = pool();
const [rootT, cacheT] = runnersDiskTemplates() as [DiskTemplate, DiskTemplate];
const VD = (name: string, bootOrder?: number): BlockDeviceRef =>
  bootOrder === undefined
    ? { kind: 'VirtualDisk', name }
    : { kind: 'VirtualDisk', name, bootOrder };
const ISO: BlockDeviceRef = { kind: 'ClusterVirtualImage', name: 'tools-iso' };

describe('policyOf / diskRefs / reusable / freedAt / diskSize', () => {
  it.each<[DiskTemplate['reclaim'], string]>([
    [undefined, 'Delete'],
    [{ onScaleDown: 'Delete', keep: 0 }, 'Delete'],
    [{ onScaleDown: 'Retain', keep: 0 }, 'Retain'],
  ])('policyOf(%j) = %s', (reclaim, want) => {
    const t: DiskTemplate = { name: 't', spec: {}, ...(reclaim === undefined ? {} : { reclaim }) };
    expect(policyOf(t)).toBe(want);
  });

  it('diskRefs lists only VirtualDisk names, in order', () => {
    expect(
      diskRefs(
        vm(p, 'a', { refs: [ISO, VD('x'), { kind: 'VirtualImage', name: 'img' }, VD('y')] }),
      ),
    ).toEqual(['x', 'y']);
    const bare = vm(p, 'b');
    delete bare.spec.blockDeviceRefs;
    expect(diskRefs(bare)).toEqual([]);
  });

  it.each<[string, Parameters<typeof disk>[2], boolean]>([
    ['Ready', {}, true],
    ['Pending', { phase: 'Pending' }, true],
    ['WaitForFirstConsumer', { phase: 'WaitForFirstConsumer' }, true],
    ['Failed', { phase: 'Failed' }, false],
    ['being deleted', { terminating: true }, false],
  ])('reusable: %s → %s', (_, opts, want) => {
    expect(reusable(disk(p, 'd', opts))).toBe(want);
  });

  it.each<[string | undefined, number | undefined]>([
    [undefined, undefined],
    ['2025-01-01T11:00:00Z', Date.parse('2025-01-01T11:00:00Z')],
    ['not a time', undefined],
  ])('freedAt(%j) = %s', (stamp, want) => {
    const d = disk(p, 'd', stamp === undefined ? {} : { freeSince: stamp });
    expect(freedAt(d)).toBe(want);
  });

  it('diskSize reads the claim size in bytes', () => {
    expect(diskSize(disk(p, 'd', { size: '5Gi' }))).toBe(5 * 2 ** 30);
    const d = disk(p, 'd');
    delete d.spec.persistentVolumeClaim;
    expect(diskSize(d)).toBeUndefined();
  });
});

describe('slotsOf', () => {
  const member = 'runners-bbbbb';

  it('unresolved placeholders of a new VM', () => {
    const v = vm(p, member, { refs: [VD('root'), VD('cache'), ISO] });
    expect(slotsOf(p, v, new Map(), [])).toEqual(
      new Map([
        ['root', { index: 0, disk: 'root', placeholder: true }],
        ['cache', { index: 1, disk: 'cache', placeholder: true }],
      ]),
    );
  });

  it('resolved refs found by the disk-template label of an existing pool disk', () => {
    const cache = disk(p, 'runners-cache-xxxxxx');
    const root = disk(p, `${member}-root`, { template: 'root' });
    const v = vm(p, member, { refs: [VD(`${member}-root`), ISO, VD('runners-cache-xxxxxx')] });
    const slots = slotsOf(
      p,
      v,
      new Map([
        [nameOf(cache), cache],
        [nameOf(root), root],
      ]),
      [],
    );
    expect(slots.get('root')).toEqual({ index: 0, disk: `${member}-root`, placeholder: false });
    expect(slots.get('cache')).toEqual({
      index: 2,
      disk: 'runners-cache-xxxxxx',
      placeholder: false,
    });
  });

  it('vanished disks recognised by name shape (Delete and Retain)', () => {
    const v = vm(p, member, { refs: [VD(`${member}-root`), VD('runners-cache-bcdfgh')] });
    const slots = slotsOf(p, v, new Map(), []);
    expect(slots.get('root')?.disk).toBe(`${member}-root`);
    expect(slots.get('cache')).toEqual({
      index: 1,
      disk: 'runners-cache-bcdfgh',
      placeholder: false,
    });
  });

  it('a vanished disk known only through a recorded binding', () => {
    const v = vm(p, member, { refs: [VD(`${member}-root`), VD('odd-name')] });
    expect(
      slotsOf(p, v, new Map(), [{ vm: member, template: 'cache', disk: 'odd-name' }]).get('cache')
        ?.disk,
    ).toBe('odd-name');
    expect(
      slotsOf(p, v, new Map(), [{ vm: 'other', template: 'cache', disk: 'odd-name' }]).has('cache'),
    ).toBe(false);
  });

  it('ignores a foreign disk (another pool) and keeps the first slot of a template', () => {
    const foreign = disk(pool({ uid: 'other' }), 'foreign');
    const second = disk(p, 'runners-cache-second');
    const first = disk(p, 'runners-cache-first1');
    const v = vm(p, member, {
      refs: [VD('foreign'), VD('runners-cache-first1'), VD('runners-cache-second')],
    });
    const slots = slotsOf(p, v, new Map([foreign, first, second].map((d) => [nameOf(d), d])), []);
    expect(slots.get('cache')).toEqual({
      index: 1,
      disk: 'runners-cache-first1',
      placeholder: false,
    });
    expect(slots.size).toBe(1);
  });
});

describe('resolveRefs', () => {
  it('renames placeholders in place, keeps images and bootOrder, copies', () => {
    const refs = [VD('root', 2), VD('cache'), ISO];
    const out = resolveRefs(
      refs,
      new Map([
        ['root', 'runners-x-root'],
        ['cache', 'runners-cache-abcdef'],
      ]),
    );
    expect(out).toEqual([VD('runners-x-root', 2), VD('runners-cache-abcdef'), ISO]);
    expect(refs[0]!.name).toBe('root');
    expect(out[2]).not.toBe(ISO);
  });

  it('leaves an unbound placeholder and an image named like a template', () => {
    const refs: BlockDeviceRef[] = [VD('root'), { kind: 'VirtualImage', name: 'cache' }];
    expect(resolveRefs(refs, new Map([['cache', 'x']]))).toEqual(refs);
  });
});

describe('placeRef', () => {
  it('renames the slot reference in place (position and bootOrder kept)', () => {
    const refs = [VD('runners-a-root', 1), VD('cache', 2), ISO];
    const out = placeRef(refs, 'runners-cache-abcdef', {
      index: 1,
      disk: 'cache',
      placeholder: true,
    });
    expect(out).toEqual([VD('runners-a-root', 1), VD('runners-cache-abcdef', 2), ISO]);
    expect(refs[1]!.name).toBe('cache');
  });

  it('appends a missing reference so a live member keeps its boot disk first', () => {
    const out = placeRef([VD('runners-a-root'), ISO], 'runners-cache-abcdef', undefined);
    expect(out).toEqual([VD('runners-a-root'), ISO, VD('runners-cache-abcdef')]);
  });

  it('never puts a new disk before the boot disk', () => {
    const out = placeRef([VD('runners-a-root')], 'data', undefined);
    expect(out[0]).toEqual(VD('runners-a-root'));
  });

  it('a slot index outside the refs appends', () => {
    const out = placeRef([VD('runners-a-root')], 'd', { index: 7, disk: 'x', placeholder: false });
    expect(out).toEqual([VD('runners-a-root'), VD('d')]);
  });
});

/** The disk a binding reuses: the first of the ranking. */
const chooseFree = (c: readonly VirtualDisk[]) => rankFree(c)[0];

describe('chooseFree', () => {
  it('returns undefined with no candidates', () => {
    expect(chooseFree([])).toBeUndefined();
  });

  it.each<[string, VirtualDisk[], string]>([
    [
      'Ready before not Ready, whatever the age',
      [
        disk(p, 'pending', { phase: 'Pending', freeSince: at(-MINUTE) }),
        disk(p, 'ready', { freeSince: at(-10 * HOUR) }),
      ],
      'ready',
    ],
    [
      'most recently freed first',
      [disk(p, 'older', { freeSince: at(-2 * HOUR) }), disk(p, 'newer', { freeSince: at(-HOUR) })],
      'newer',
    ],
    [
      'unstamped counts as freed just now',
      [disk(p, 'stamped', { freeSince: at(-MINUTE) }), disk(p, 'unstamped')],
      'unstamped',
    ],
    [
      'ties broken by name',
      [
        disk(p, 'b', { freeSince: at(-HOUR) }),
        disk(p, 'a', { freeSince: at(-HOUR) }),
        disk(p, 'c', { freeSince: at(-HOUR) }),
      ],
      'a',
    ],
  ])('%s', (_, candidates, want) => {
    expect(nameOf(chooseFree(candidates)!)).toBe(want);
    expect(nameOf(chooseFree([...candidates].reverse())!)).toBe(want);
  });

  it('returns one of the candidates, independent of their order', () => {
    const arb = fc.array(
      fc.record({
        name: fc.stringMatching(/^[a-z]{1,4}$/),
        ready: fc.boolean(),
        freed: fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }),
      }),
      { minLength: 1, maxLength: 8 },
    );
    fc.assert(
      fc.property(arb, (specs) => {
        const uniq = [...new Map(specs.map((s) => [s.name, s])).values()];
        const ds = uniq.map((s) =>
          disk(p, s.name, {
            phase: s.ready ? 'Ready' : 'Pending',
            ...(s.freed === undefined ? {} : { freeSince: at(-s.freed * MINUTE) }),
          }),
        );
        const got = chooseFree(ds);
        expect(ds).toContain(got);
        expect(chooseFree([...ds].reverse())).toBe(got);
        if (ds.some((d) => d.status?.phase === 'Ready')) expect(got?.status?.phase).toBe('Ready');
      }),
    );
  });
});

describe('newDisk / poolOwned', () => {
  it('a Retain disk is labelled for the pool and owned by it', () => {
    const d = newDisk(p, cacheT, 'runners-cache-abcdef', {
      kind: 'VirtualMachinePool',
      name: 'runners',
      uid: 'pool-uid-1',
    });
    expect(d).toEqual({
      apiVersion: API_VERSION,
      kind: 'VirtualDisk',
      metadata: {
        name: 'runners-cache-abcdef',
        namespace: 'ci',
        labels: {
          [keys.poolUid]: 'pool-uid-1',
          [keys.pool]: 'runners',
          [keys.diskTemplate]: 'cache',
        },
        ownerReferences: [
          {
            apiVersion: API_VERSION,
            kind: 'VirtualMachinePool',
            name: 'runners',
            uid: 'pool-uid-1',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: cacheT.spec,
    });
    expect(poolOwned(p, d)).toBe(true);
  });

  it('a Delete disk is owned by its VM, uid left empty for a VM created in the same pass', () => {
    const d = newDisk(p, rootT, 'runners-bbbbb-root', {
      kind: 'VirtualMachine',
      name: 'runners-bbbbb',
    });
    expect(d.metadata.ownerReferences).toEqual([
      {
        apiVersion: API_VERSION,
        kind: 'VirtualMachine',
        name: 'runners-bbbbb',
        uid: '',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(poolOwned(p, d)).toBe(false);
  });

  it('deep-copies the template spec', () => {
    const d = newDisk(p, rootT, 'x', { kind: 'VirtualMachine', name: 'v' });
    d.spec.persistentVolumeClaim!.size = '1Ti';
    expect(rootT.spec.persistentVolumeClaim?.size).toBe('30Gi');
  });

  it.each<[string, (d: VirtualDisk) => void, boolean]>([
    ['labelled and controlled by the pool', () => undefined, true],
    ['label of another pool', (d) => (d.metadata.labels![keys.poolUid] = 'other'), false],
    ['controlled by a VM', (d) => (d.metadata.ownerReferences![0]!.uid = 'vm-uid'), false],
    ['no controller flag', (d) => (d.metadata.ownerReferences![0]!.controller = false), false],
  ])('poolOwned: %s → %s', (_, edit, want) => {
    const d = disk(p, 'runners-cache-abcdef');
    edit(d);
    expect(poolOwned(p, d)).toBe(want);
  });
});
