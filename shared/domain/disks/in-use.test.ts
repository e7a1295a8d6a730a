import { describe, expect, it } from 'vitest';
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import type { Plan } from '../plan/index.js';
import { attached, diskHolder, freesDisks, referencedBy } from './in-use.js';
import { observe, plan } from '../plan/index.js';
import { pruneDisks } from './prune.js';
import {
  HOUR,
  NOW,
  at,
  disk,
  observed,
  pool,
  runnersDiskTemplates,
  seededRandom,
  steady,
  notMember,
  vm,
  actionsOf as of,
} from '../../../test/unit/builders.js';

/** A VM of the namespace that is no pool's: a member detached as a ReplicaSet detaches (label and
 * controller reference removed), or any VM a user made. */
function outsider(p: VirtualMachinePool, name: string, disks: readonly string[]): VirtualMachine {
  return notMember(p, name, {
    refs: disks.map((d) => ({ kind: 'VirtualDisk' as const, name: d })),
  });
}

function attachedTo(d: VirtualDisk, vmName: string): VirtualDisk {
  return { ...d, status: { ...d.status, attachedToVirtualMachines: [{ name: vmName }] } };
}

const names = (ds: readonly { disk: VirtualDisk }[]) => ds.map((c) => c.disk.metadata.name);

describe('a disk is in use while any VM references it (binding)', () => {
  const p = pool({ replicas: 2 });
  const a = steady(p, 'runners-aaaaa');
  const free = disk(p, 'runners-cache-ffffff', { freeSince: at(-HOUR) });

  it('binds a free Retain disk nobody uses (the baseline)', () => {
    const pl = plan(observed(p, [a], [free]), NOW, seededRandom(1));
    expect(names(of(pl, 'claimDisk'))).toEqual(['runners-cache-ffffff']);
  });

  it('never binds a free disk a VM outside the pool references: a new disk is made instead', () => {
    const obs = observed(p, [a], [free]);
    const stranger = outsider(p, 'someones-vm', ['runners-cache-ffffff']);
    const pl = plan({ ...obs, vms: [...obs.vms, stranger] }, NOW, seededRandom(1));
    expect(of(pl, 'claimDisk')).toEqual([]);
    expect(of(pl, 'createVm')).toHaveLength(1);
    expect(names(of(pl, 'createDisk'))).toContain(
      pl.status.intent?.bindings?.find((b) => b.template === 'cache')?.disk,
    );
    expect(pl.status.intent?.bindings?.map((b) => b.disk)).not.toContain('runners-cache-ffffff');
  });

  it('never binds a free disk the platform reports attached (status.attachedToVirtualMachines)', () => {
    const pl = plan(observed(p, [a], [attachedTo(free, 'hotplugged-vm')]), NOW, seededRandom(1));
    expect(of(pl, 'claimDisk')).toEqual([]);
    expect(pl.status.intent?.bindings?.map((b) => b.disk)).not.toContain('runners-cache-ffffff');
  });

  it('takes a recorded create whose name a VM outside the pool holds as taken, not pending', () => {
    const recorded: VirtualMachinePool = {
      ...p,
      status: { intent: { creates: ['runners-bbbbb'] } },
    };
    const obs = observed(recorded, [a]);
    const holder = outsider(recorded, 'runners-bbbbb', []);
    const view = observe({ ...obs, vms: [...obs.vms, holder] });
    expect(view.pendingCreates).toEqual([]);
    expect(view.taken.has('runners-bbbbb')).toBe(true);
    expect(view.warnings[0]).toContain('runners-bbbbb');
  });
});

describe('a disk is in use while any VM references it (free-since)', () => {
  const p = pool({ replicas: 1 });
  const a = steady(p, 'runners-aaaaa');

  it('does not start the free time of a disk a detached member still references', () => {
    const d = disk(p, 'runners-cache-dddddd');
    const obs = observed(p, [a], [d]);
    const gone = outsider(p, 'runners-detch', ['runners-cache-dddddd']);
    const stamped = (pl: Plan) =>
      of(pl, 'updateDisk')
        .filter((u) => u.why.includes('freeSince'))
        .map((u) => nameOf(u.disk));
    expect(stamped(plan(obs, NOW, seededRandom(1)))).toEqual(['runners-cache-dddddd']);
    expect(stamped(plan({ ...obs, vms: [...obs.vms, gone] }, NOW, seededRandom(1)))).toEqual([]);
  });

  it('clears a stamp once the platform reports the disk attached', () => {
    const d = attachedTo(disk(p, 'runners-cache-dddddd', { freeSince: at(-HOUR) }), 'other');
    const pl = plan(observed(p, [a], [d]), NOW, seededRandom(1));
    const u = of(pl, 'updateDisk').find((x) => nameOf(x.disk) === 'runners-cache-dddddd');
    expect(u?.why).toEqual(['inUse']);
    expect(u?.disk.metadata.annotations?.[keys.freeSince]).toBeUndefined();
  });
});

describe('prune touches only disks the pool controls, never one in use', () => {
  const withoutCache = () =>
    pool({ virtualDiskTemplates: runnersDiskTemplates().filter((t) => t.name !== 'cache') });

  it('deletes a removed-template disk only under the pool or a member as controller', () => {
    const p = withoutCache();
    const mine = disk(p, 'runners-cache-aaaaaa');
    const labelOnly = { ...mine, metadata: { ...mine.metadata, ownerReferences: [] } };
    const elsewhere = {
      ...mine,
      metadata: {
        ...mine.metadata,
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'someone', controller: true },
        ],
      },
    };
    const prune = (d: VirtualDisk) =>
      pruneDisks(observe(observed(p, [], [d])), new Map(), new Set()).deletes;
    expect(prune(mine).map((x) => x.why)).toEqual(['removedTemplate']);
    expect(prune(labelOnly)).toEqual([]);
    expect(prune(elsewhere)).toEqual([]);
  });

  it('deletes a removed-template disk a member controls (a Delete disk) once it is free', () => {
    const p = withoutCache();
    const a = steady(p, 'runners-aaaaa');
    const owned = disk(p, 'runners-aaaaa-cache', { owner: a.vm });
    const detachedRefs = a.vm.spec.blockDeviceRefs?.filter((r) => r.name !== 'runners-aaaaa-cache');
    const member = { ...a.vm, spec: { ...a.vm.spec, blockDeviceRefs: detachedRefs } };
    const out = pruneDisks(
      observe(observed(p, [{ vm: member, disks: a.disks }], [owned])),
      new Map(),
      new Set(),
    );
    expect(out.deletes.map((x) => x.name)).toEqual(['runners-aaaaa-cache']);
  });

  it('never deletes a removed-template disk a Terminating member still references', () => {
    const p = withoutCache();
    const leaving = steady(p, 'runners-gonee', {
      terminating: true,
      cache: 'runners-cache-gggggg',
    });
    const out = pruneDisks(observe(observed(p, [leaving])), new Map(), new Set());
    expect(out.deletes.map((x) => x.name)).not.toContain('runners-cache-gggggg');
  });

  it('never deletes a disk a VM outside the pool references, or the platform reports attached', () => {
    const p = pool({
      virtualDiskTemplates: runnersDiskTemplates().map((t) => ({
        ...t,
        reclaim: { onScaleDown: 'Delete', keep: 0 },
      })),
    });
    const d = disk(p, 'runners-cache-ffffff');
    const obs = observed(p, [], [d]);
    const prune = (o: typeof obs) => pruneDisks(observe(o), new Map(), new Set()).deletes;
    expect(prune(obs).map((x) => x.why)).toEqual(['deletePolicy']);
    expect(prune({ ...obs, vms: [outsider(p, 'x', ['runners-cache-ffffff'])] })).toEqual([]);
    expect(prune(observed(p, [], [attachedTo(d, 'x')]))).toEqual([]);
    const removed = withoutCache();
    const old = disk(removed, 'runners-cache-ffffff');
    expect(
      pruneDisks(
        observe({
          pool: removed,
          vms: [outsider(removed, 'x', ['runners-cache-ffffff'])],
          disks: [old],
        }),
        new Map(),
        new Set(),
      ).deletes,
    ).toEqual([]);
  });
});

describe('in-use helpers', () => {
  const p = pool();

  it('attached: a non-empty status.attachedToVirtualMachines', () => {
    const d = disk(p, 'd');
    expect(attached(d)).toBe(false);
    expect(attached({ ...d, status: { attachedToVirtualMachines: [] } })).toBe(false);
    expect(attached(attachedTo(d, 'v'))).toBe(true);
  });

  it('referencedBy: VirtualDisk references of every VM, Terminating ones included', () => {
    const refs = referencedBy([
      vm(p, 'a', { refs: [{ kind: 'VirtualDisk', name: 'x' }] }),
      vm(p, 'b', {
        terminating: true,
        refs: [
          { kind: 'VirtualDisk', name: 'y' },
          { kind: 'ClusterVirtualImage', name: 'iso' },
        ],
      }),
    ]);
    expect([...refs].sort()).toEqual(['x', 'y']);
  });

  it('diskHolder keeps of a VM only its identity, pool label and the disks it names', () => {
    const v = vm(p, 'holder', {
      refs: [
        { kind: 'VirtualDisk', name: 'x' },
        { kind: 'ClusterVirtualImage', name: 'iso' },
      ],
    });
    const slim = diskHolder(v);
    expect(slim).toEqual({
      metadata: {
        name: 'holder',
        namespace: v.metadata.namespace,
        uid: v.metadata.uid,
        labels: { [keys.poolUid]: p.metadata.uid },
      },
      spec: { blockDeviceRefs: [{ kind: 'VirtualDisk', name: 'x' }] },
    });
    expect(referencedBy([slim])).toEqual(referencedBy([v]));
  });

  it('freesDisks: claims, deletes and free-since stamps, nothing else', () => {
    const d = disk(p, 'd');
    expect(freesDisks([])).toBe(false);
    expect(freesDisks([{ kind: 'updateDisk', disk: d, why: ['grow', 'inUse'] }])).toBe(false);
    expect(freesDisks([{ kind: 'createDisk', disk: d }])).toBe(false);
    expect(freesDisks([{ kind: 'updateDisk', disk: d, why: ['freeSince'] }])).toBe(true);
    expect(freesDisks([{ kind: 'claimDisk', disk: d, forVm: 'v' }])).toBe(true);
    expect(
      freesDisks([{ kind: 'deleteDisk', name: 'd', uid: 'u', resourceVersion: '1', why: 'gc' }]),
    ).toBe(true);
  });
});

function nameOf(d: VirtualDisk): string {
  return d.metadata.name ?? '';
}
