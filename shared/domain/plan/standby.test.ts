/**
 * Warm standby through whole plans on an in-memory API server: refill, promotion first on a
 * scale-up, return on a scale-down, surplus, rollout order; and the new L1 as a property under
 * duplicated, concurrent and crashed reconciles interleaved action by action.
 */
import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { MINUTE, NOW, pool, seededRandom, later } from '../../../test/unit/builders.js';
import type { World } from '../../../test/unit/world.js';
import { converge, observedOf, scale, openIntent } from '../../../test/unit/world.js';
import type { Action } from './actions.js';
import { isFenced, isGate } from './actions.js';
import { isStandby, nameOf, planScaleDownWith } from '../fleet/index.js';
import type { Plan } from './index.js';
import { plan } from './index.js';

const updates = (pl: Plan) =>
  pl.actions.filter((a): a is Extract<Action, { kind: 'updateVm' }> => a.kind === 'updateVm');
const creates = (plans: readonly Plan[]) =>
  plans.flatMap((p) => p.actions.filter((a) => a.kind === 'createVm'));

type Standby = { replicas: number; state?: 'Stopped' | 'Running'; reuseOnScaleDown?: boolean };

/** A converged pool of `replicas` with the given standby. */
function world(replicas: number, standby: Standby): World {
  const p = pool({ replicas });
  p.spec.standby = { state: 'Stopped', ...standby };
  return converge({ pool: p, vms: [], disks: [] }, NOW).w;
}

/** The world with its pool's standby replaced. */
const withStandby = (w: World, standby: Standby): World => ({
  ...w,
  pool: { ...w.pool, spec: { ...w.pool.spec, standby: { state: 'Stopped', ...standby } } },
});

const split = (w: World) => ({
  active: w.vms.filter((v) => !isStandby(v)),
  standby: w.vms.filter(isStandby),
});

describe('warm standby', () => {
  it('keeps N stopped standby members beside the replicas, left out of replicas and the scale selector', () => {
    const w = world(2, { replicas: 3 });
    const { active, standby } = split(w);
    expect([active.length, standby.length]).toEqual([2, 3]);
    for (const s of standby) {
      expect(s.metadata.labels?.[keys.standby]).toBe('true');
      expect(s.spec.runPolicy).toBe('AlwaysOff');
      expect(s.status?.phase).toBe('Stopped');
    }
    expect(w.pool.status).toMatchObject({
      replicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
      standbyReplicas: 3,
      readyStandbyReplicas: 3,
      selector: `${keys.poolUid}=pool-uid-1,${keys.standby} notin (true)`,
    });
    expect(openIntent(w)).toBeUndefined();
    // L5: converged, nothing to write.
    const idle = plan(observedOf(w), later(MINUTE), seededRandom(5));
    expect([idle.actions, idle.writeStatus]).toEqual([[], false]);
  });

  it('a scale-up promotes first (recorded, fenced, before any create), creates the rest, then refills', () => {
    const w0 = world(2, { replicas: 2 });
    const before = split(w0).standby.map(nameOf).sort();
    const first = plan(observedOf(scale(w0, 5)), NOW, seededRandom(3));
    const promotions = updates(first).filter((u) => u.why.includes('promote'));
    expect(promotions.map((u) => nameOf(u.vm)).sort()).toEqual(before);
    for (const u of promotions) {
      expect(isFenced(u) && isGate(u)).toBe(true);
      expect(u.vm.metadata.labels?.[keys.standby]).toBeUndefined();
      expect(u.vm.spec.runPolicy).toBe(w0.pool.spec.virtualMachineTemplate.spec?.runPolicy);
    }
    expect(first.status.intent?.promotions?.map((r) => r.name).sort()).toEqual(before);
    // Promotions run before every create (the refill must not land while they carry the label).
    const kinds = first.actions.map((a) => a.kind);
    const lastPromotion = first.actions.findLastIndex((a) => isGate(a));
    expect(kinds.indexOf('createVm')).toBeGreaterThan(lastPromotion);
    // One new replica (5 = 2 + 2 promoted + 1) and two new standby members.
    expect(first.status.intent?.creates).toHaveLength(3);
    expect(first.status.intent?.standbyCreates).toHaveLength(2);

    const { w, plans } = converge(scale(w0, 5), NOW);
    const { active, standby } = split(w);
    expect([active.length, standby.length]).toEqual([5, 2]);
    expect(active.map(nameOf)).toEqual(expect.arrayContaining(before));
    expect(creates(plans)).toHaveLength(3);
    expect(openIntent(w)).toBeUndefined();
  });

  it('Running standby: members run idle and count as ready standby', () => {
    const w = world(1, { replicas: 2, state: 'Running' });
    for (const s of split(w).standby) {
      expect(s.spec.runPolicy).not.toBe('AlwaysOff');
      expect(s.status?.phase).toBe('Running');
    }
    expect(w.pool.status).toMatchObject({
      replicas: 1,
      standbyReplicas: 2,
      readyStandbyReplicas: 2,
    });
  });

  it('switching the state from Stopped to Running starts the standby members in place', () => {
    const w0 = world(1, { replicas: 2 });
    const w1 = withStandby(w0, { replicas: 2, state: 'Running' });
    const pl = plan(observedOf(w1), NOW, seededRandom(1));
    expect(updates(pl).map((u) => u.why)).toEqual([['standbyState'], ['standbyState']]);
    expect(pl.fenced).toBe(false);
    const { w } = converge(w1, NOW);
    expect(split(w).standby.map((s) => s.status?.phase)).toEqual(['Running', 'Running']);
  });

  it('lowering standby.replicas removes the surplus, never touching the replicas', () => {
    const w0 = world(2, { replicas: 3 });
    const lower = withStandby(w0, { replicas: 1 });
    const { w, plans } = converge(lower, NOW);
    const deleted = plans.flatMap((p) => p.actions.filter((a) => a.kind === 'deleteVm'));
    expect(deleted).toHaveLength(2);
    expect(deleted.every((d) => d.why === 'standby')).toBe(true);
    expect(split(w).active.map(nameOf)).toEqual(split(w0).active.map(nameOf));
    expect(split(w).standby).toHaveLength(1);
  });

  it('reuseOnScaleDown returns removed replicas to the standby while it is short, deletes the rest', () => {
    const w0 = world(3, { replicas: 1, reuseOnScaleDown: true });
    const { standby } = split(w0);
    // Make room for one: the standby member leaves (a user deletes it).
    const room = { ...w0, vms: w0.vms.filter((v) => v !== standby[0]) };
    const { w, plans } = converge(scale(room, 1), NOW);
    const returned = plans.flatMap((p) => updates(p).filter((u) => u.why.includes('toStandby')));
    expect(returned).toHaveLength(1);
    expect(returned[0]!.vm.spec.runPolicy).toBe('AlwaysOff');
    expect(plans.flatMap((p) => p.actions.filter((a) => a.kind === 'deleteVm'))).toHaveLength(1);
    expect(creates(plans)).toEqual([]);
    expect([split(w).active.length, split(w).standby.length]).toEqual([1, 1]);
  });

  it('a rollout patches standby members first under a budget of one', () => {
    const w0 = world(2, { replicas: 1, state: 'Running' });
    const t = w0.pool.spec.virtualMachineTemplate;
    const next: World = {
      ...w0,
      pool: {
        ...w0.pool,
        spec: {
          ...w0.pool.spec,
          rollout: { maxUnavailable: 1 },
          virtualMachineTemplate: { ...t, metadata: { labels: { rev: '2' } } },
        },
      },
    };
    const pl = plan(observedOf(next), NOW, seededRandom(1));
    const patched = updates(pl).filter((u) => u.why.includes('rollout'));
    expect(patched.map((u) => isStandby(u.vm))).toEqual([true]);
    expect(pl.status.conditions?.find((c) => c.type === 'Synced')?.status).toBe('False');
  });

  it('a scaledownwith naming a standby member is refused; its replicas are untouched', () => {
    const w = world(1, { replicas: 1 });
    const s = split(w).standby[0]!;
    const r = planScaleDownWith(w.pool, { targets: [nameOf(s)] }, new Map([[nameOf(s), s]]));
    expect(r).toMatchObject({ ok: false, code: 400 });
  });
});
