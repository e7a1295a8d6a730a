import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../api/index.js';
import { AWAITING_RESTART, keys } from '../../api/index.js';
import { templateHash, ALPHABET } from '../formats/index.js';
import { plan } from './index.js';
import {
  NOW,
  disk,
  observed as observe,
  pool,
  steady,
  vm,
  actionsOf as of,
  rand42 as rand,
} from '../../../test/unit/builders.js';

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

  it('gives a live member a disk for a template it has none of (a template added), appended', () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa', {
      refs: [
        { kind: 'VirtualDisk', name: 'runners-aaaaa-root' },
        { kind: 'ClusterVirtualImage', name: 'tools-iso' },
      ],
    });
    const pl = plan({ pool: p, vms: [a.vm], disks: [a.disks[0]!] }, NOW, rand());
    const [created] = of(pl, 'createDisk');
    expect(created?.disk.metadata.labels?.[keys.diskTemplate]).toBe('cache');
    const [update] = of(pl, 'updateVm');
    expect(update?.vm.spec.blockDeviceRefs).toEqual([
      { kind: 'VirtualDisk', name: 'runners-aaaaa-root' },
      { kind: 'ClusterVirtualImage', name: 'tools-iso' },
      { kind: 'VirtualDisk', name: created?.disk.metadata.name },
    ]);
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
