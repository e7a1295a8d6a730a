/**
 * `spec.paused` and `spec.minReadySeconds` through whole plans.
 */
import { describe, expect, it } from 'vitest';
import {
  at,
  MINUTE,
  NOW,
  SECOND,
  pool,
  seededRandom,
  steady,
  later,
} from '../../../test/unit/builders.js';
import type { World } from '../../../test/unit/world.js';
import { converge, observedOf, scale, openIntent } from '../../../test/unit/world.js';
import { plan } from './index.js';
import { planScaleDownWith } from '../fleet/index.js';

function world(n: number): World {
  const p = pool({ replicas: n });
  const ms = Array.from({ length: n }, (_, i) => steady(p, `runners-m${i}xxx`));
  return converge({ pool: p, vms: ms.map((m) => m.vm), disks: ms.flatMap((m) => m.disks) }, NOW).w;
}
const paused = (w: World, on: boolean): World => ({
  ...w,
  pool: { ...w.pool, spec: { ...w.pool.spec, paused: on } },
});

describe('spec.paused', () => {
  it('holds through a scale and a member deletion: no action, status still computed, Paused=True', () => {
    let w = paused(world(3), true);
    w = scale(w, 5);
    w = { ...w, vms: w.vms.slice(1) };
    const pl = plan(observedOf(w), NOW, seededRandom(1));
    expect(pl.actions).toEqual([]);
    expect(pl.fenced).toBe(false);
    expect(pl.status).toMatchObject({ replicas: 2, readyReplicas: 2 });
    expect(pl.status.conditions?.find((c) => c.type === 'Paused')).toMatchObject({
      status: 'True',
      reason: 'Paused',
    });
    // Conditions that agree: a paused pool is not converging.
    expect(pl.status.conditions?.find((c) => c.type === 'Progressing')).toMatchObject({
      status: 'False',
      reason: 'Paused',
      message: 'Paused at 2 of 5 replicas (spec.paused is true).',
    });
    // Written once; then a paused pool is quiet (L5).
    const again = plan(
      observedOf({ ...w, pool: { ...w.pool, status: pl.status } }),
      later(MINUTE),
      seededRandom(2),
    );
    expect([again.actions, again.writeStatus]).toEqual([[], false]);
  });

  it('drops recorded creates not made yet, and unpausing resumes from the live state', () => {
    // Delete disks only: a create with a Retain disk recorded for it is kept (plan.test.ts).
    const p = pool({ replicas: 1 });
    p.spec.virtualDiskTemplates = p.spec.virtualDiskTemplates.filter(
      (t) => t.reclaim?.onScaleDown !== 'Retain',
    );
    let w = scale(converge({ pool: p, vms: [], disks: [] }, NOW).w, 3);
    const first = plan(observedOf(w), NOW, seededRandom(1));
    expect(first.status.intent?.creates).toHaveLength(2);
    // The intent was recorded, then the pool was paused before any create ran: a pause stops
    // creation, so no executor still holding the old plan finds its names recorded any more.
    w = paused({ ...w, pool: { ...w.pool, status: first.status } }, true);
    const held = plan(observedOf(w), NOW, seededRandom(2));
    expect(held.actions).toEqual([]);
    expect(held.writeStatus).toBe(true);
    expect(held.status.intent).toBeUndefined();
    w = { ...w, pool: { ...w.pool, status: held.status } };
    expect(plan(observedOf(w), NOW, seededRandom(3)).writeStatus).toBe(false);
    const { w: after } = converge(paused(w, false), later(SECOND));
    expect(after.vms).toHaveLength(3);
    expect(after.pool.status?.conditions?.find((c) => c.type === 'Paused')).toBeUndefined();
    expect(openIntent(after)).toBeUndefined();
  });

  it('refuses scaledownwith with 409 saying the pool is paused', () => {
    const w = paused(world(2), true);
    const v = w.vms[0]!;
    const r = planScaleDownWith(
      w.pool,
      { targets: [v.metadata.name!] },
      new Map([[v.metadata.name!, v]]),
    );
    expect(r).toMatchObject({ ok: false, code: 409 });
    expect(r.ok ? '' : r.message).toContain('is paused');
  });
});

describe('spec.minReadySeconds', () => {
  it('counts a member available once Running that long, and rechecks then', () => {
    const p = pool({ replicas: 2 });
    p.spec.minReadySeconds = 60;
    const old = steady(p, 'runners-aaaaa');
    const fresh = steady(p, 'runners-bbbbb');
    fresh.vm.status = {
      ...fresh.vm.status,
      stats: { phasesTransitions: [{ phase: 'Running', timestamp: at(-20 * SECOND) }] },
    };
    const w: World = { pool: p, vms: [old.vm, fresh.vm], disks: [...old.disks, ...fresh.disks] };
    const pl = plan(observedOf(w), NOW, seededRandom(1));
    expect(pl.status).toMatchObject({ readyReplicas: 2, availableReplicas: 1 });
    expect(pl.status.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'False',
      message: 'Only 1 of 2 replicas are ready for minReadySeconds (2 Running).',
    });
    expect(pl.recheckAt).toEqual(later(40 * SECOND));
    const then = plan(
      observedOf({ ...w, pool: { ...p, status: pl.status } }),
      later(40 * SECOND),
      seededRandom(1),
    );
    expect(then.status.availableReplicas).toBe(2);
    expect(then.recheckAt).toBeUndefined();
  });
});
