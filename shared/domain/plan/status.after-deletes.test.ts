/**
 * The fence reports the members as the plan's deletes leave them, so the pass after the deletes
 * writes nothing (the delete side's writes are its formula: deletes + 1 fence + disk stamps); a
 * recorded delete that is done is inert. Flows on the in-memory API server, which keeps a VM with a
 * finalizer Terminating as the real one does.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { at, MINUTE, NOW, pool, seededRandom, steady } from '../../../test/unit/builders.js';
import type { World } from '../../../test/unit/world.js';
import {
  annotate,
  apply,
  applyAction,
  observedOf,
  openIntent,
  readOf,
  scale,
} from '../../../test/unit/world.js';
import type { Action } from './actions.js';
import { membersAfterDeletes, withoutDoneDeletes } from './status.js';
import { plan } from './index.js';

const FINALIZER = 'virtualization.deckhouse.io/vm-cleanup';

/** A settled world of `n` Running members, each with `finalizers`. */
function world(n: number, finalizers: string[] = []): World {
  const p = pool({ replicas: n, scaleDownPolicy: 'NewestFirst' });
  const ms = Array.from({ length: n }, (_, i) =>
    steady(p, `runners-m${i}xxx`, { created: at(-(n - i) * MINUTE) }),
  );
  const vms = ms.map(({ vm }) => ({ ...vm, metadata: { ...vm.metadata, finalizers } }));
  const w = { pool: p, vms, disks: ms.flatMap((m) => m.disks) };
  return apply(w, plan(observedOf(w), NOW, seededRandom(1)), NOW);
}

const step = (w: World) => plan(observedOf(w), NOW, seededRandom(2));
const progressing = (w: World) => w.pool.status?.conditions?.find((c) => c.type === 'Progressing');

describe('the fence says what the deletes leave', () => {
  it('a victim without a finalizer: the fence reports it gone, the pass after writes nothing', () => {
    let w = scale(world(3), 2);
    const fence = step(w);
    expect(fence.fenced).toBe(true);
    expect(fence.status.replicas).toBe(2);
    expect(fence.status.readyReplicas).toBe(2);
    expect(fence.status.conditions?.map((c) => c.type)).not.toContain('Progressing');
    expect(fence.status.intent?.deletes?.map((d) => d.name)).toEqual(['runners-m2xxx']);
    w = apply(w, fence, NOW);
    expect(w.vms).toHaveLength(2);
    // The pass after: the victim's Retain disk is stamped free, the status is not written.
    const after = step(w);
    expect(after.writeStatus).toBe(false);
    expect(after.fenced).toBe(false);
    expect(after.actions.map((a) => a.kind)).toEqual(['updateDisk']);
    w = apply(w, after, NOW);
    const rest = step(w);
    expect([rest.actions, rest.writeStatus]).toEqual([[], false]);
    // The done delete stays recorded, inert: nothing is left to do.
    expect(w.pool.status?.intent?.deletes?.map((d) => d.name)).toEqual(['runners-m2xxx']);
    expect(openIntent(w)).toBeUndefined();
    expect(w.pool.status?.replicas).toBe(2);
  });

  it('a victim with a finalizer: reported Terminating; the status changes once more when it is gone', () => {
    let w = scale(world(3, [FINALIZER]), 2);
    const fence = step(w);
    // status.replicas counts a Terminating member (the reference's rule); ready ones do not.
    expect(fence.status.replicas).toBe(3);
    expect(fence.status.readyReplicas).toBe(2);
    expect(fence.status.updatedReplicas).toBe(2);
    w = apply(w, fence, NOW);
    expect(w.vms.filter((v) => v.metadata.deletionTimestamp !== undefined)).toHaveLength(1);
    expect(progressing(w)).toMatchObject({ status: 'True', reason: 'ReplicasProgressing' });
    const terminating = step(w);
    expect(terminating.writeStatus).toBe(false);
    w = apply(w, terminating, NOW);
    // The platform releases its finalizer: the VM is gone, and only that is written.
    w = { ...w, vms: w.vms.filter((v) => v.metadata.deletionTimestamp === undefined) };
    const gone = step(w);
    expect(gone.writeStatus).toBe(true);
    expect(gone.fenced).toBe(false);
    expect(gone.status.replicas).toBe(2);
    expect(gone.status.conditions?.map((c) => c.type)).not.toContain('Progressing');
    // That write drops the inert delete with it.
    expect(gone.status.intent).toBeUndefined();
  });

  it('a delete refused (the victim changed since) leaves no status ahead: the pass after writes it back', () => {
    let w = scale(world(2), 1);
    const read = readOf(w);
    const fence = step(w);
    expect(fence.status.replicas).toBe(1);
    w = { ...w, pool: { ...w.pool, status: fence.status } };
    // Both members are protected after the plan read them: its delete answers 409.
    w = annotate(annotate(w, 'runners-m0xxx', { [keys.protected]: 'true' }), 'runners-m1xxx', {
      [keys.protected]: 'true',
    });
    const del = fence.actions.find((a) => a.kind === 'deleteVm');
    expect(del).toBeDefined();
    expect(applyAction(w, del!, NOW, read).ok).toBe(false);
    const again = step(w);
    expect(again.actions.filter((a) => a.kind === 'deleteVm')).toEqual([]);
    expect(again.writeStatus).toBe(true);
    expect(again.status.replicas).toBe(2);
    expect(again.status.intent).toBeUndefined();
    expect(again.status.conditions?.find((c) => c.type === 'Progressing')).toMatchObject({
      reason: 'ScaleDownBlockedByProtection',
    });
  });

  it('a crash between the fence and the delete: the next pass deletes the recorded victim', () => {
    let w = scale(world(3), 2);
    const fence = step(w);
    // Only the fence landed.
    w = { ...w, pool: { ...w.pool, status: fence.status } };
    const retry = step(w);
    expect(retry.actions.filter((a) => a.kind === 'deleteVm').map((a) => a.name)).toEqual(
      fence.actions.filter((a) => a.kind === 'deleteVm').map((a) => a.name),
    );
    expect(retry.fenced).toBe(true);
    expect(retry.status.replicas).toBe(2);
  });
});

describe('membersAfterDeletes', () => {
  const p = pool({ replicas: 2 });
  const del = (name: string, uid: string): Action => ({
    kind: 'deleteVm',
    name,
    uid,
    why: 'scaleDown',
  });
  const member = (name: string, finalizers?: string[]): VirtualMachine => {
    const { vm } = steady(p, name);
    return finalizers === undefined ? vm : { ...vm, metadata: { ...vm.metadata, finalizers } };
  };

  it('drops a deleted member without a finalizer and marks one with a finalizer, by name and uid', () => {
    const members = [member('runners-aaaaa'), member('runners-bbbbb', [FINALIZER])];
    const deletes = [
      del('runners-aaaaa', 'uid-runners-aaaaa'),
      del('runners-bbbbb', 'uid-runners-bbbbb'),
    ];
    const out = membersAfterDeletes(members, deletes, NOW);
    expect(out.map((m) => [m.metadata.name, m.metadata.deletionTimestamp])).toEqual([
      ['runners-bbbbb', '2025-01-01T12:00:00Z'],
    ]);
  });

  it('leaves a same-named member of another uid alone', () => {
    const members = [member('runners-aaaaa')];
    const out = membersAfterDeletes(members, [del('runners-aaaaa', 'uid-other')], NOW);
    expect(out).toEqual(members);
  });
});

describe('withoutDoneDeletes', () => {
  const status = {
    replicas: 1,
    intent: {
      deletes: [
        { name: 'a', uid: 'uid-a' },
        { name: 'b', uid: 'uid-b' },
      ],
      creates: ['c'],
    },
  };

  it('keeps the deletes of live members and every other part of the intent', () => {
    expect(withoutDoneDeletes(status, new Set(['uid-a']))?.intent).toEqual({
      creates: ['c'],
      deletes: [{ name: 'a', uid: 'uid-a' }],
    });
  });

  it('drops the intent when only done deletes were left', () => {
    const only = { replicas: 1, intent: { deletes: [{ name: 'a', uid: 'uid-a' }] } };
    expect(withoutDoneDeletes(only, new Set())).toEqual({ replicas: 1 });
  });

  it('returns the status itself when every recorded delete is pending', () => {
    expect(withoutDoneDeletes(status, new Set(['uid-a', 'uid-b']))).toBe(status);
  });
});
