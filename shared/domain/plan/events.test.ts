import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { disk, pool, vm } from '../../../test/unit/builders.js';
import { eventFor } from './events.js';

const p = pool();
const m = vm(p, 'runners-aaaaa');
const d = disk(p, 'runners-cache-aaaaab', { size: '20Gi' });

describe('eventFor', () => {
  it('names a create, and its failure with the error', () => {
    expect(eventFor({ kind: 'createVm', vm: m }, true)).toEqual({
      type: 'Normal',
      reason: 'SuccessfulCreate',
      note: 'Created VirtualMachine "runners-aaaaa".',
      action: 'Create',
    });
    expect(eventFor({ kind: 'createVm', vm: m }, false, 'quota')).toMatchObject({
      type: 'Warning',
      reason: 'FailedCreate',
      note: 'Failed to create a VirtualMachine from the template: quota',
    });
  });

  it('tells a delete by why it happened and how its drain ended', () => {
    const del = { kind: 'deleteVm', name: 'runners-aaaaa', uid: 'u' } as const;
    expect(eventFor({ ...del, why: 'unhealthy' }, true)?.reason).toBe('ReplicaReplaced');
    expect(eventFor({ ...del, why: 'expired', maxAge: '10h' }, true)?.note).toContain(
      'older than maxMemberAge 10h',
    );
    const timedOut = { outcome: 'timedOut', timeout: '5m' } as const;
    expect(eventFor({ ...del, why: 'scaleDown', drain: timedOut }, true)).toMatchObject({
      type: 'Warning',
      reason: 'DrainTimedOut',
    });
    const drained = { outcome: 'drained', timeout: '5m' } as const;
    expect(eventFor({ ...del, why: 'scaleDown', drain: drained }, true)?.note).toBe(
      'Deleted VirtualMachine "runners-aaaaa" (drained).',
    );
    expect(eventFor({ ...del, why: 'standby' }, true)?.note).toBe(
      'Deleted standby VirtualMachine "runners-aaaaa".',
    );
    expect(eventFor({ ...del, why: 'target' }, false, 'gone')?.reason).toBe('FailedDelete');
  });

  it('reports a disk only when collected, grown or failed to create', () => {
    const gc = {
      kind: 'deleteDisk',
      name: 'x',
      uid: 'u',
      resourceVersion: '1',
      why: 'gc',
    } as const;
    expect(eventFor(gc, true)?.reason).toBe('DiskCollected');
    expect(eventFor(gc, false)).toBeUndefined();
    expect(eventFor({ kind: 'updateDisk', disk: d, why: ['grow'] }, true)?.note).toBe(
      'Grew VirtualDisk "runners-cache-aaaaab" to 20Gi, the size of its template.',
    );
    expect(eventFor({ kind: 'updateDisk', disk: d, why: ['freeSince'] }, true)).toBeUndefined();
    expect(eventFor({ kind: 'claimDisk', disk: d, forVm: 'm' }, true)).toBeUndefined();
    expect(
      eventFor({ kind: 'claimDisk', disk: d, forVm: 'm', grownTo: '20Gi' }, true)?.reason,
    ).toBe('DiskSizeGrown');
    expect(eventFor({ kind: 'createDisk', disk: d }, true)).toBeUndefined();
    expect(eventFor({ kind: 'createDisk', disk: d }, false, 'denied')?.reason).toBe('FailedCreate');
  });

  it('names member updates that move a member or ask it to drain; a rollout patch has none', () => {
    const reason = (w: 'promote' | 'toStandby' | 'drainRequest' | 'drainCancel' | 'rollout') =>
      eventFor({ kind: 'updateVm', vm: m, why: [w], drainTimeout: '5m' }, true)?.reason;
    expect(reason('promote')).toBe('StandbyPromoted');
    expect(reason('toStandby')).toBe('ReturnedToStandby');
    expect(reason('drainRequest')).toBe('DrainRequested');
    expect(reason('drainCancel')).toBe('DrainCancelled');
    expect(reason('rollout')).toBeUndefined();
    expect(
      eventFor({ kind: 'updateVm', vm: m, why: ['drainRequest'], drainTimeout: '5m' }, true)?.note,
    ).toContain(`${keys.drained}: "true", or after drainTimeout 5m`);
  });
});
