import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { templateHash, ALPHABET } from '../formats/index.js';
import { plan } from './index.js';
import {
  HOUR,
  NOW,
  at,
  observed as observe,
  pool,
  seededRandom,
  steady,
  actionsOf as of,
  actionKinds as kinds,
  rand42 as rand,
  stored,
} from '../../../test/unit/builders.js';

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
