import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import type { DiskPlan } from './bind.js';
import { bindDisks } from './bind.js';
import { decideCount, observe } from '../plan/index.js';
import type { Observed } from '../plan/index.js';
import {
  at,
  disk,
  MINUTE,
  observed,
  pool,
  seededRandom,
  steady,
  vm,
} from '../../../test/unit/builders.js';

function bind(obs: Observed, seed = 1): DiskPlan {
  const view = observe(obs);
  const rand = seededRandom(seed);
  return bindDisks({ ...view, roster: decideCount({ ...view, rand }), rand });
}

describe('bindDisks', () => {
  it('gives a new member a claimed free Retain disk, grown to the template, and its own Delete disk after it', () => {
    const p = pool({ replicas: 1 });
    const free = disk(p, 'runners-cache-zzzzzz', { freeSince: at(-MINUTE), size: '10Gi' });
    const d = bind(observed(p, [], [free]));
    expect(d.claims).toHaveLength(1);
    const claimed = d.claims[0]!.disk;
    expect(claimed.metadata.annotations?.[keys.freeSince]).toBeUndefined();
    expect(claimed.spec.persistentVolumeClaim?.size).toBe('50Gi');
    expect(d.claims[0]!.grownTo).toBe('50Gi');
    const vmName = d.vmCreates[0]!.vm.metadata.name ?? '';
    expect(d.claims[0]!.forVm).toBe(vmName);
    expect(d.retainCreates).toEqual([]);
    expect(d.deleteCreates.map((c) => [c.disk.metadata.name, c.ownerVm])).toEqual([
      [`${vmName}-root`, vmName],
    ]);
    expect(d.vmCreates[0]!.vm.spec.blockDeviceRefs?.map((r) => r.name)).toEqual([
      `${vmName}-root`,
      'runners-cache-zzzzzz',
      'tools-iso',
    ]);
    expect(d.bindings).toEqual([{ vm: vmName, template: 'cache', disk: 'runners-cache-zzzzzz' }]);
  });

  it('creates the disk of a recorded binding under the recorded name when it is missing', () => {
    const p = pool({
      replicas: 1,
      status: {
        intent: {
          creates: ['runners-ppppp'],
          bindings: [{ vm: 'runners-ppppp', template: 'cache', disk: 'runners-cache-pppppp' }],
        },
      },
    });
    const d = bind(observed(p, []));
    expect(d.retainCreates.map((c) => c.disk.metadata.name)).toEqual(['runners-cache-pppppp']);
    expect(d.claims).toEqual([]);
  });

  it('recreates a vanished Delete disk of a staying member, owned by that member', () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa');
    const d = bind(observed(p, [{ vm: a.vm, disks: a.disks.slice(1) }]));
    expect(d.deleteCreates.map((c) => c.disk.metadata.ownerReferences?.[0]?.uid)).toEqual([
      'uid-runners-aaaaa',
    ]);
    expect(d.refs.size).toBe(0);
  });

  it('resolves the placeholders of a staying member in place, binding a disk per Retain template', () => {
    const p = pool({ replicas: 1 });
    const v = vm(p, 'runners-aaaaa', {
      refs: [
        { kind: 'VirtualDisk', name: 'root' },
        { kind: 'VirtualDisk', name: 'cache' },
      ],
    });
    const d = bind(observed(p, [{ vm: v, disks: [] }]));
    const refs = d.refs.get('runners-aaaaa')?.map((r) => r.name);
    expect(refs?.[0]).toBe('runners-aaaaa-root');
    expect(refs?.[1]).toMatch(/^runners-cache-[a-z0-9]{6}$/);
    expect(d.bindings.map((b) => b.vm)).toEqual(['runners-aaaaa']);
  });

  it('never binds one disk twice, whatever the number of newcomers', () => {
    const p = pool({ replicas: 5 });
    const free = [1, 2].map((i) =>
      disk(p, `runners-cache-free${i}x`, { freeSince: at(-i * MINUTE) }),
    );
    const d = bind(observed(p, [], free));
    const bound = d.bindings.map((b) => b.disk);
    expect(new Set(bound).size).toBe(5);
    expect(d.claims.map((c) => c.disk.metadata.name).sort()).toEqual([
      'runners-cache-free1x',
      'runners-cache-free2x',
    ]);
    expect(d.retainCreates).toHaveLength(3);
  });
});
