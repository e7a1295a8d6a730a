import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { observe } from './observe.js';
import { at, disk, HOUR, notMember, observed, pool, steady } from '../../../test/unit/builders.js';

describe('observe', () => {
  it('sorts members into live and leaving and the disks they hold', () => {
    const p = pool();
    const a = steady(p, 'runners-aaaaa');
    const t = steady(p, 'runners-ttttt', { terminating: true });
    const stranger = notMember(p, 'runners-sssss', { labelled: true });
    const v = observe({ ...observed(p, [a, t]), vms: [a.vm, t.vm, stranger] });
    expect(v.members.map((m) => m.metadata.name)).toEqual(['runners-aaaaa', 'runners-ttttt']);
    expect([...v.live.keys()]).toEqual(['runners-aaaaa']);
    expect(v.busy.has('runners-aaaaa-root')).toBe(true);
    expect(v.heldByLeaving.has('runners-ttttt-root')).toBe(true);
    expect(v.heldByLeaving.has('runners-aaaaa-root')).toBe(false);
    expect(v.busy.has('runners-ttttt-root')).toBe(true);
  });

  it('names the disks a live member shares with a VM read before it, and only those', () => {
    const p = pool();
    const a = steady(p, 'runners-aaaaa', { cache: 'runners-cache-shared' });
    const b = steady(p, 'runners-bbbbb', { cache: 'runners-cache-shared' });
    const c = steady(p, 'runners-ccccc');
    const t = steady(p, 'runners-ttttt', { terminating: true, cache: 'runners-cache-leaver' });
    const u = steady(p, 'runners-uuuuu', { cache: 'runners-cache-leaver' });
    expect([...observe(observed(p, [a, b, c, t, u])).sharedRefs]).toEqual(['runners-cache-shared']);
    expect(observe(observed(p, [a, c])).sharedRefs.size).toBe(0);
    // A VM outside the pool read first: the member after it shares its disk.
    const stranger = notMember(p, 'runners-sssss', {
      labelled: true,
      refs: [{ kind: 'VirtualDisk', name: 'runners-ccccc-root' }],
    });
    const v = observe({ ...observed(p, [c]), vms: [stranger, c.vm] });
    expect([...v.sharedRefs]).toEqual(['runners-ccccc-root']);
  });

  it('keeps recorded creates not yet seen, and drops one a foreign VM holds with a warning', () => {
    const p = pool({
      status: { intent: { creates: ['runners-aaaaa', 'runners-ppppp', 'runners-fffff'] } },
    });
    const v = observe({
      ...observed(p, [steady(p, 'runners-aaaaa')]),
      foreign: new Set(['runners-fffff']),
    });
    expect(v.pendingCreates).toEqual(['runners-ppppp']);
    expect(v.warnings).toEqual([
      "VirtualMachine runners-fffff exists and is not the pool's: creating another name",
    ]);
    for (const n of ['runners-aaaaa', 'runners-fffff', 'runners-ppppp'])
      expect(v.taken.has(n)).toBe(true);
    expect(v.taken.has('runners-zzzzz')).toBe(false);
  });

  it('takes the name of every VM read: live, Terminating, labelled but not owned, outside the pool', () => {
    const p = pool();
    const a = steady(p, 'runners-aaaaa');
    const t = steady(p, 'runners-ttttt', { terminating: true });
    const unowned = notMember(p, 'runners-uuuuu', { labelled: true });
    const outsider = notMember(p, 'runners-ooooo');
    const v = observe({ ...observed(p, [a, t]), vms: [a.vm, t.vm, unowned, outsider] });
    for (const n of ['runners-aaaaa', 'runners-ttttt', 'runners-uuuuu', 'runners-ooooo'])
      expect(v.taken.has(n), n).toBe(true);
    expect(v.taken.has('runners-zzzzz')).toBe(false);
    expect([...v.live.keys()]).toEqual(['runners-aaaaa']);
  });

  it('a recorded create the pool labelled but does not own is seen, not pending; one outside is neither', () => {
    const p = pool({ status: { intent: { creates: ['runners-uuuuu', 'runners-ooooo'] } } });
    const unowned = notMember(p, 'runners-uuuuu', { labelled: true });
    const outsider = notMember(p, 'runners-ooooo');
    const v = observe({ ...observed(p, []), vms: [unowned, outsider] });
    expect(v.pendingCreates).toEqual([]);
    expect(v.warnings).toEqual([
      "VirtualMachine runners-ooooo exists and is not the pool's: creating another name",
    ]);
  });

  it('keeps recorded victims and targets only while live under the recorded uid', () => {
    const p = pool({
      annotations: {
        [keys.scaleDownTargets]: JSON.stringify([
          { name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' },
          { name: 'runners-ggggg', uid: 'uid-runners-ggggg' },
        ]),
      },
      status: {
        intent: {
          deletes: [
            { name: 'runners-bbbbb', uid: 'uid-runners-bbbbb' },
            { name: 'runners-ccccc', uid: 'another-uid' },
          ],
        },
      },
    });
    const members = ['runners-aaaaa', 'runners-bbbbb', 'runners-ccccc'].map((n) => steady(p, n));
    const v = observe(observed(p, members));
    expect(v.pendingDeletes.map((d) => d.name)).toEqual(['runners-bbbbb']);
    expect(v.targets.map((t) => t.name)).toEqual(['runners-aaaaa', 'runners-ggggg']);
    expect(v.liveTargets.map((t) => t.name)).toEqual(['runners-aaaaa']);
  });

  it('indexes the pool disks with their template; a removed template has none', () => {
    const p = pool();
    const kept = disk(p, 'runners-cache-bbbbbb');
    const orphan = disk(p, 'runners-old-bbbbbb', { template: 'old' });
    const leaving = disk(p, 'runners-cache-cccccc', { terminating: at(-HOUR) });
    const other = disk(p, 'elsewhere');
    other.metadata.labels = {};
    const v = observe(observed(p, [], [kept, orphan, leaving, other]));
    expect(v.poolDisks.map((d) => [d.disk.metadata.name, d.template?.name])).toEqual([
      ['runners-cache-bbbbbb', 'cache'],
      ['runners-old-bbbbbb', undefined],
    ]);
    expect(v.diskByName.has('elsewhere')).toBe(true);
  });
});
