import { describe, expect, it } from 'vitest';
import { pool, runnersDiskTemplates } from '../../../test/unit/builders.js';
import { newDisk } from '../disks/index.js';
import { newMember } from '../fleet/index.js';
import type { Action } from './actions.js';
import { batchesOf, tasksOf } from './batches.js';

const p = pool();
const [root, cache] = runnersDiskTemplates() as [
  ReturnType<typeof runnersDiskTemplates>[number],
  ReturnType<typeof runnersDiskTemplates>[number],
];
const createVm = (name: string, disks: string[] = []): Action => ({
  kind: 'createVm',
  vm: newMember(
    p,
    name,
    'h',
    disks.map((d) => ({ kind: 'VirtualDisk', name: d })),
  ),
});
const own = (vm: string): Action => ({
  kind: 'createDisk',
  disk: newDisk(p, root, `${vm}-root`, { kind: 'VirtualMachine', name: vm }),
  ownerVm: vm,
});
const retain = (name: string): Action => ({
  kind: 'createDisk',
  disk: newDisk(p, cache, name, { kind: 'VirtualMachinePool', name: 'runners', uid: 'pool-uid-1' }),
});
const del = (name: string): Action => ({
  kind: 'deleteVm',
  name,
  uid: `uid-${name}`,
  resourceVersion: '1',
  why: 'scaleDown',
});
const label = (a: Action): string =>
  a.kind === 'createVm'
    ? `vm:${a.vm.metadata.name ?? ''}`
    : a.kind === 'createDisk'
      ? `disk:${a.disk.metadata.name ?? ''}`
      : `${a.kind}:${'name' in a ? a.name : ''}`;
const labels = (bs: Action[][]): string[][] => bs.map((b) => b.map(label));

describe('batchesOf', () => {
  it('puts a new VM’s Retain disk just before it and its own disk just after it, in its batch', () => {
    const out = batchesOf([
      retain('c-a'),
      retain('c-b'),
      retain('c-spare'),
      createVm('a', ['c-a']),
      createVm('b', ['c-b']),
      own('a'),
      own('b'),
      del('x'),
      del('y'),
    ]);
    expect(labels(out)).toEqual([
      ['disk:c-spare'],
      ['disk:c-a', 'vm:a', 'disk:a-root', 'disk:c-b', 'vm:b', 'disk:b-root'],
      ['deleteVm:x', 'deleteVm:y'],
    ]);
  });

  it('a disk two new VMs reference goes before the first; a disk of a VM not created stays put', () => {
    const out = batchesOf([retain('c'), createVm('a', ['c']), createVm('b', ['c']), own('z')]);
    expect(labels(out)).toEqual([['disk:c', 'vm:a', 'vm:b'], ['disk:z-root']]);
  });

  it('keeps consecutive actions of one kind together and the plan’s order across kinds', () => {
    expect(labels(batchesOf([del('a'), createVm('n'), del('b')]))).toEqual([
      ['deleteVm:a'],
      ['vm:n'],
      ['deleteVm:b'],
    ]);
    expect(batchesOf([])).toEqual([]);
  });
});

describe('tasksOf', () => {
  it('one task per new VM with its disks, one per action elsewhere', () => {
    const [, vms, dels] = batchesOf([
      retain('spare'),
      retain('c-a'),
      createVm('a', ['c-a']),
      createVm('b'),
      own('a'),
      own('b'),
      del('x'),
      del('y'),
    ]) as [Action[], Action[], Action[]];
    expect(tasksOf(vms).map((t) => t.map(label))).toEqual([
      ['disk:c-a', 'vm:a', 'disk:a-root'],
      ['vm:b', 'disk:b-root'],
    ]);
    expect(tasksOf(dels).map((t) => t.map(label))).toEqual([['deleteVm:x'], ['deleteVm:y']]);
  });
});
