import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { DiskTemplate, VirtualDisk } from '../../api/index.js';
import { API_VERSION, keys } from '../../api/index.js';
import { at, disk, HOUR, MINUTE, pool, runnersDiskTemplates } from '../../../test/unit/builders.js';
import { newDisk, poolOwned, rankFree } from './disks.js';
import { nameOf } from '../fleet/index.js';

const p = pool();
const [rootT, cacheT] = runnersDiskTemplates() as [DiskTemplate, DiskTemplate];

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
