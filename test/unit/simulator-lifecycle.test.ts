import { describe, expect, it } from 'vitest';
import { AWAITING_RESTART } from '../../shared/api/vm.js';
import {
  attachmentsOf,
  nextDiskStatus,
  nextVmStatus,
  type Memory,
} from '../../local/simulator/lifecycle.js';
import { seededRandom } from '../../local/simulator/rng.js';

type Vm = { metadata: Record<string, unknown>; spec: Record<string, unknown>; status?: object };

/** Runs the VM state machine like the simulator does, with a fake clock; returns the phases seen. */
function drive(vm: Vm, mem: Memory, steps: number, edit?: (i: number, vm: Vm) => void): string[] {
  const seen: string[] = [];
  for (let i = 0, now = 0; i < steps; i++, now += 100) {
    edit?.(i, vm);
    vm.status = nextVmStatus(vm, mem, now, () => {
      mem.since = now;
      mem.delay = 150;
    });
    const phase = (vm.status as { phase: string }).phase;
    if (seen.at(-1) !== phase) seen.push(phase);
  }
  return seen;
}

const vm = (spec: Record<string, unknown>): Vm => ({ metadata: { generation: 3 }, spec });
const awaiting = (v: Vm) =>
  (v.status as { conditions: { type: string }[] }).conditions.find(
    (c) => c.type === AWAITING_RESTART,
  );

describe('simulator lifecycle', () => {
  it('runs an AlwaysOn VM through Pending and Starting, tracking observedGeneration', () => {
    const v = vm({ runPolicy: 'AlwaysOn' });
    expect(drive(v, { since: 0, delay: 0 }, 8)).toEqual(['Pending', 'Starting', 'Running']);
    expect((v.status as { observedGeneration: number }).observedGeneration).toBe(3);
  });

  it('keeps AlwaysOff and Manual VMs Stopped', () => {
    for (const runPolicy of ['AlwaysOff', 'Manual']) {
      expect(drive(vm({ runPolicy }), { since: 0, delay: 0 }, 8)).toEqual(['Pending', 'Stopped']);
    }
  });

  it('with Manual approval flags a change and keeps running', () => {
    const v = vm({ cpu: { cores: 1 }, disruptions: { restartApprovalMode: 'Manual' } });
    const mem: Memory = { since: 0, delay: 0 };
    drive(v, mem, 8);
    v.spec.cpu = { cores: 2 };
    expect(drive(v, mem, 5)).toEqual(['Running']);
    expect(awaiting(v)).toMatchObject({ status: 'True', reason: 'ChangesPendingRestart' });
  });

  it('does not flag runPolicy or disruptions changes', () => {
    const v = vm({ runPolicy: 'AlwaysOn' });
    const mem: Memory = { since: 0, delay: 0 };
    drive(v, mem, 8);
    v.spec.disruptions = { restartApprovalMode: 'Manual' };
    v.spec.runPolicy = 'AlwaysOnUnlessStoppedManually';
    drive(v, mem, 3);
    expect(awaiting(v)).toBeUndefined();
  });

  it('with Automatic approval restarts and clears the condition', () => {
    const v = vm({ cpu: { cores: 1 }, disruptions: { restartApprovalMode: 'Automatic' } });
    const mem: Memory = { since: 0, delay: 0 };
    drive(v, mem, 8);
    v.spec.cpu = { cores: 4 };
    expect(drive(v, mem, 10)).toEqual(['Stopping', 'Starting', 'Running']);
    expect(awaiting(v)).toBeUndefined();
  });

  it('holds a VM in Pending until its disks are provisioned, then boots it', () => {
    const v = vm({ runPolicy: 'AlwaysOn' });
    const mem: Memory = { since: 0, delay: 0 };
    const seen: string[] = [];
    for (let i = 0; i < 8; i++) {
      v.status = nextVmStatus(v, mem, i * 100, () => undefined, i >= 4);
      seen.push((v.status as { phase: string }).phase);
    }
    expect(seen).toEqual([
      'Pending',
      'Pending',
      'Pending',
      'Pending',
      'Starting',
      'Running',
      'Running',
      'Running',
    ]);
  });

  it('a VM that never starts stays Starting; its phase history records every transition', () => {
    const v = vm({ runPolicy: 'AlwaysOn' });
    expect(drive(v, { since: 0, delay: 0, neverStart: true }, 12)).toEqual(['Pending', 'Starting']);
    const booted = vm({ runPolicy: 'AlwaysOn' });
    drive(booted, { since: 0, delay: 0 }, 8);
    const history = (booted.status as { stats: { phasesTransitions: { phase: string }[] } }).stats
      .phasesTransitions;
    expect(history.map((h) => h.phase)).toEqual(['Pending', 'Starting', 'Running']);
  });

  it('a VM stopped while it starts goes Stopping, then Stopped', () => {
    const v = vm({ runPolicy: 'AlwaysOn' });
    const mem: Memory = { since: 0, delay: 0, neverStart: true };
    drive(v, mem, 4);
    v.spec.runPolicy = 'AlwaysOff';
    expect(drive(v, mem, 4)).toEqual(['Stopping', 'Stopped']);
  });

  it('makes a disk Ready with the requested size after its delay', () => {
    const d = { metadata: { generation: 1 }, spec: { persistentVolumeClaim: { size: '10Gi' } } };
    const mem: Memory = { since: 0, delay: 200 };
    expect(nextDiskStatus(d, mem, 0)).toMatchObject({ phase: 'Pending' });
    const pending = { ...d, status: { phase: 'Pending' } };
    expect(nextDiskStatus(pending, mem, 100).phase).toBe('Pending');
    expect(nextDiskStatus(pending, mem, 200)).toMatchObject({ phase: 'Ready', capacity: '10Gi' });
  });

  it('reports the VMs naming a disk in attachedToVirtualMachines, as the platform does', () => {
    const at = (name: string, phase: string | undefined, disks: string[], namespace = 'ci') => ({
      metadata: { name, namespace },
      spec: { blockDeviceRefs: disks.map((n) => ({ kind: 'VirtualDisk', name: n })) },
      ...(phase === undefined ? {} : { status: { phase } }),
    });
    const attached = attachmentsOf([
      at('b-vm', 'Stopped', ['shared', 'b-root']),
      at('a-vm', 'Running', ['shared']),
      at('new-vm', undefined, ['fresh']),
      at('far', 'Running', ['shared'], 'other'),
    ]);
    expect(attached.get('ci/shared')).toEqual([
      { name: 'a-vm', mounted: true },
      { name: 'b-vm', mounted: false },
    ]);
    expect(attached.get('ci/fresh')).toEqual([{ name: 'new-vm', mounted: false }]);
    expect(attached.get('other/shared')).toEqual([{ name: 'far', mounted: true }]);
    const d = { metadata: { generation: 1 }, spec: {}, status: { phase: 'Ready' } };
    const mem: Memory = { since: 0, delay: 0 };
    const used = nextDiskStatus(d, mem, 0, attached.get('ci/shared'));
    expect(used.attachedToVirtualMachines).toHaveLength(2);
    // Released: the field goes, as the platform leaves it empty.
    expect(nextDiskStatus({ ...d, status: used }, mem, 0, [])).not.toHaveProperty(
      'attachedToVirtualMachines',
    );
  });

  it('replays the same jitter under the same seed', () => {
    const a = seededRandom(7);
    const b = seededRandom(7);
    const xs = Array.from({ length: 5 }, () => a());
    expect(Array.from({ length: 5 }, () => b())).toEqual(xs);
    const c = seededRandom(8);
    expect(Array.from({ length: 5 }, () => c())).not.toEqual(xs);
  });
});
