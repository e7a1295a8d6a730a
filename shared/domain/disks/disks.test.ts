import { describe, expect, it } from 'vitest';
import type { BlockDeviceRef, DiskTemplate } from '../../api/index.js';
import { disk, pool, vm } from '../../../test/unit/builders.js';
import {
  diskRefs,
  diskSize,
  freedAt,
  placeRef,
  policyOf,
  resolveRefs,
  reusable,
  slotOf,
  slotsOf,
  templateBits,
  templateOfDisk,
  whole,
} from './disks.js';
import { nameOf } from '../fleet/index.js';

const p = pool();
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

describe('templateOfDisk', () => {
  it('names the template of a pool disk by its label, and none for another disk', () => {
    expect(templateOfDisk(p, disk(p, 'runners-cache-aaaaaa'))?.name).toBe('cache');
    expect(
      templateOfDisk(p, disk(p, 'runners-old-aaaaaa', { template: 'removed' })),
    ).toBeUndefined();
    expect(
      templateOfDisk(p, disk(p, 'runners-cache-tttttt', { terminating: true })),
    ).toBeUndefined();
    const other = disk(pool({ uid: 'other-pool' }), 'other-cache-aaaaaa');
    expect(templateOfDisk(p, other)).toBeUndefined();
  });
});

describe('slotsOf', () => {
  const member = 'runners-bbbbb';

  it('unresolved placeholders of a new VM', () => {
    const v = vm(p, member, { refs: [VD('root'), VD('cache'), ISO] });
    expect(slotsOf(p, v, new Map(), [])).toEqual([
      { template: 'root', index: 0, disk: 'root', placeholder: true },
      { template: 'cache', index: 1, disk: 'cache', placeholder: true },
    ]);
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
    expect(slotOf(slots, 'root')).toEqual({
      template: 'root',
      index: 0,
      disk: `${member}-root`,
      placeholder: false,
    });
    expect(slotOf(slots, 'cache')).toEqual({
      template: 'cache',
      index: 2,
      disk: 'runners-cache-xxxxxx',
      placeholder: false,
    });
  });

  it('vanished disks recognised by name shape (Delete and Retain)', () => {
    const v = vm(p, member, { refs: [VD(`${member}-root`), VD('runners-cache-bcdfgh')] });
    const slots = slotsOf(p, v, new Map(), []);
    expect(slotOf(slots, 'root')?.disk).toBe(`${member}-root`);
    expect(slotOf(slots, 'cache')).toEqual({
      template: 'cache',
      index: 1,
      disk: 'runners-cache-bcdfgh',
      placeholder: false,
    });
  });

  it('a vanished disk known only through a recorded binding', () => {
    const v = vm(p, member, { refs: [VD(`${member}-root`), VD('odd-name')] });
    expect(
      slotOf(
        slotsOf(p, v, new Map(), [{ vm: member, template: 'cache', disk: 'odd-name' }]),
        'cache',
      )?.disk,
    ).toBe('odd-name');
    expect(
      slotOf(
        slotsOf(p, v, new Map(), [{ vm: 'other', template: 'cache', disk: 'odd-name' }]),
        'cache',
      ),
    ).toBeUndefined();
  });

  it('ignores a foreign disk (another pool) and keeps the first slot of a template', () => {
    const foreign = disk(pool({ uid: 'other' }), 'foreign');
    const second = disk(p, 'runners-cache-second');
    const first = disk(p, 'runners-cache-first1');
    const v = vm(p, member, {
      refs: [VD('foreign'), VD('runners-cache-first1'), VD('runners-cache-second')],
    });
    const slots = slotsOf(p, v, new Map([foreign, first, second].map((d) => [nameOf(d), d])), []);
    expect(slots).toEqual([
      { template: 'cache', index: 1, disk: 'runners-cache-first1', placeholder: false },
    ]);
  });
});

describe('whole', () => {
  const member = 'runners-bbbbb';
  const bits = templateBits(p.spec.virtualDiskTemplates)!;
  const root = disk(p, `${member}-root`, { template: 'root' });
  const cache = disk(p, 'runners-cache-xxxxxx');
  const byName = (...ds: (typeof root)[]) => new Map(ds.map((d) => [nameOf(d), d]));
  const refs = [VD(`${member}-root`), ISO, VD('runners-cache-xxxxxx')];

  it('a member whose references are pool disks covering every template needs nothing', () => {
    expect(whole(p, vm(p, member, { refs }), byName(root, cache), bits)).toBe(true);
  });

  it('takes the long way for a missing template, a placeholder, a vanished or a foreign disk', () => {
    const both = byName(root, cache);
    expect(whole(p, vm(p, member, { refs: [VD(`${member}-root`)] }), both, bits)).toBe(false);
    expect(whole(p, vm(p, member, { refs: [VD(`${member}-root`), VD('cache')] }), both, bits)).toBe(
      false,
    );
    expect(whole(p, vm(p, member, { refs }), byName(root), bits)).toBe(false);
    const foreign = disk(pool({ uid: 'other' }), 'runners-cache-xxxxxx');
    expect(whole(p, vm(p, member, { refs }), byName(root, foreign), bits)).toBe(false);
  });

  it('gives each distinct template name one bit', () => {
    const t = p.spec.virtualDiskTemplates;
    expect(templateBits([...t, ...t])).toEqual(bits);
    expect(bits.all).toBe(3);
    const many = Array.from({ length: 31 }, (_, i) => ({ ...t[0]!, name: `t${i}` }));
    expect(templateBits(many)).toBeUndefined();
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
      template: 'cache',
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
    const out = placeRef([VD('runners-a-root')], 'd', {
      template: 'x',
      index: 7,
      disk: 'x',
      placeholder: false,
    });
    expect(out).toEqual([VD('runners-a-root'), VD('d')]);
  });
});
