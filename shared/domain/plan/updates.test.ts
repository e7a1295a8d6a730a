import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { observe } from './observe.js';
import { diskUpdates, memberUpdates } from './updates.js';
import { at, disk, MINUTE, NOW, observed, pool, steady } from '../../../test/unit/builders.js';

describe('memberUpdates', () => {
  it('writes new refs and the rollout patch in one update', () => {
    const p = pool();
    const a = steady(p, 'runners-aaaaa', { annotations: { [keys.patchedTemplateHash]: 'old' } });
    const view = observe(observed(p, [a]));
    const refs = [
      ...(a.vm.spec.blockDeviceRefs ?? []),
      { kind: 'VirtualDisk' as const, name: 'extra' },
    ];
    const [u, ...rest] = memberUpdates({
      ...view,
      staying: [a.vm],
      refs: new Map([['runners-aaaaa', refs]]),
    });
    expect(rest).toEqual([]);
    expect(u?.why).toEqual(['attach', 'rollout']);
    expect(u?.vm.spec.blockDeviceRefs).toEqual(refs);
    expect(u?.vm.metadata.annotations?.[keys.patchedTemplateHash]).toBe(view.hash);
  });

  it('advances a patched member and leaves a stable one alone', () => {
    const p = pool();
    const stable = steady(p, 'runners-aaaaa');
    const patched = steady(p, 'runners-bbbbb', { labels: { [keys.templateHash]: 'old' } });
    const view = observe(observed(p, [stable, patched]));
    const out = memberUpdates({ ...view, staying: [stable.vm, patched.vm], refs: new Map() });
    expect(out.map((u) => [u.vm.metadata.name, u.why])).toEqual([['runners-bbbbb', ['advance']]]);
  });
});

describe('diskUpdates', () => {
  it('stamps free-since on a free Retain disk, clears it on a used one and grows small disks', () => {
    const p = pool();
    const a = steady(p, 'runners-aaaaa', { cache: 'runners-cache-usedxx' });
    const used = disk(p, 'runners-cache-usedxx', { freeSince: at(-MINUTE) });
    const free = disk(p, 'runners-cache-freexx', { size: '1Gi' });
    const view = observe(observed(p, [{ vm: a.vm, disks: [a.disks[0]!, used] }], [free]));
    const out = diskUpdates(view, view.busy, new Set(), NOW);
    expect(out.map((u) => [u.disk.metadata.name, u.why])).toEqual([
      ['runners-cache-usedxx', ['inUse']],
      ['runners-cache-freexx', ['freeSince', 'grow']],
    ]);
    const stamped = out[1]!.disk;
    expect(stamped.metadata.annotations?.[keys.freeSince]).toBe('2025-01-01T12:00:00Z');
    expect(stamped.spec.persistentVolumeClaim?.size).toBe('50Gi');
  });

  it('leaves a disk claimed in this plan to its claim', () => {
    const p = pool();
    const free = disk(p, 'runners-cache-freexx');
    const view = observe(observed(p, [], [free]));
    const claimed = new Set(['runners-cache-freexx']);
    expect(diskUpdates(view, claimed, claimed, NOW)).toEqual([]);
  });
});
