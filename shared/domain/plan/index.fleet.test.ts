/**
 * Fleet control through whole plans: scale-in protection, deletion cost, spread, drain before
 * removal; flows pass after pass on an in-memory API server, and the laws as properties.
 */
import { describe, expect, it } from 'vitest';
import type { ScaleDownPolicy } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  at,
  MINUTE,
  NOW,
  SECOND,
  pool,
  seededRandom,
  steady,
  actionsOf as of,
  later,
} from '../../../test/unit/builders.js';
import type { World } from '../../../test/unit/world.js';
import {
  annotate,
  apply,
  converge,
  observedOf,
  scale,
  openIntent,
} from '../../../test/unit/world.js';
import type { Action } from './actions.js';
import { isFenced } from './actions.js';
import { nameOf, planScaleDownWith } from '../fleet/index.js';
import type { Plan } from './index.js';
import { plan } from './index.js';

/** A world of `n` steady members (newest last) of a pool with the given drain timeout. */
function world(
  n: number,
  o: { replicas?: number; drainTimeout?: string; policy?: ScaleDownPolicy } = {},
): World {
  const p = pool({ replicas: o.replicas ?? n, scaleDownPolicy: o.policy ?? 'NewestFirst' });
  if (o.drainTimeout !== undefined) p.spec.scaleDown = { drainTimeout: o.drainTimeout };
  const ms = Array.from({ length: n }, (_, i) =>
    steady(p, `runners-m${i}xxx`, { created: at(-(n - i) * MINUTE) }),
  );
  const w = { pool: p, vms: ms.map((m) => m.vm), disks: ms.flatMap((m) => m.disks) };
  // Settle the status once so the starting point is quiescent.
  return apply(w, plan(observedOf(w), NOW, seededRandom(1)), NOW);
}

const names = (w: World) => w.vms.map(nameOf).sort();
const eventsOf = (plans: Plan[], kind: Action['kind']) =>
  plans.flatMap((p) => p.actions.filter((a) => a.kind === kind));

describe('fleet control: drain before removal', () => {
  it('marks the victim, waits (zero writes) until drained, then deletes it', () => {
    let { w, plans } = converge(scale(world(3, { drainTimeout: '10m' }), 2), NOW);
    const request = eventsOf(plans, 'updateVm');
    expect(request).toHaveLength(1);
    expect(request[0]).toMatchObject({ why: ['drainRequest'] });
    expect(isFenced(request[0]!)).toBe(true);
    expect(names(w)).toHaveLength(3);
    expect(w.pool.status?.drainingReplicas).toBe(1);
    expect(w.pool.status?.intent?.deletes?.map((d) => d.name)).toEqual(['runners-m2xxx']);
    const waiting = plan(observedOf(w), later(MINUTE), seededRandom(1));
    expect([waiting.actions, waiting.writeStatus]).toEqual([[], false]);
    expect(waiting.recheckAt).toEqual(later(10 * MINUTE));

    w = annotate(w, 'runners-m2xxx', { [keys.drained]: 'true' });
    ({ w, plans } = converge(w, later(2 * MINUTE)));
    expect(eventsOf(plans, 'deleteVm')).toEqual([
      expect.objectContaining({
        name: 'runners-m2xxx',
        drain: { outcome: 'drained', timeout: '10m' },
      }),
    ]);
    expect(names(w)).toEqual(['runners-m0xxx', 'runners-m1xxx']);
    expect(w.pool.status?.drainingReplicas).toBe(0);
    expect(openIntent(w)).toBeUndefined();
  });

  it('deletes at the timeout with a DrainTimedOut reason', () => {
    let { w } = converge(scale(world(2, { drainTimeout: '30s' }), 1), NOW);
    expect(converge(w, later(29 * SECOND)).plans).toHaveLength(1);
    const { w: after, plans } = converge(w, later(30 * SECOND));
    expect(eventsOf(plans, 'deleteVm')[0]).toMatchObject({ drain: { outcome: 'timedOut' } });
    w = after;
    expect(names(w)).toEqual(['runners-m0xxx']);
  });

  it('a scale-up during the drain cancels it (marks removed, no new VM)', () => {
    let { w } = converge(scale(world(3, { drainTimeout: '10m' }), 1), NOW);
    expect(w.pool.status?.drainingReplicas).toBe(2);
    const { w: back, plans } = converge(scale(w, 3), later(MINUTE));
    w = back;
    expect(eventsOf(plans, 'createVm')).toEqual([]);
    const cancels = eventsOf(plans, 'updateVm').filter(
      (a) => a.kind === 'updateVm' && a.why.includes('drainCancel'),
    );
    expect(cancels).toHaveLength(2);
    expect(names(w)).toHaveLength(3);
    for (const v of w.vms) expect(v.metadata.annotations?.[keys.drainRequested]).toBeUndefined();
    expect(w.pool.status?.drainingReplicas).toBe(0);
    expect(openIntent(w)).toBeUndefined();
  });

  it('survives a crash anywhere: the drain is on the VM and the victim in the recorded intent', () => {
    const start = scale(world(3, { drainTimeout: '10m' }), 2);
    // Crash 1: the intent was written, the mark was not.
    const first = plan(observedOf(start), NOW, seededRandom(1));
    const crashed = { ...start, pool: { ...start.pool, status: first.status } };
    const resumed = plan(observedOf(crashed), later(SECOND), seededRandom(9));
    expect(of(resumed, 'updateVm').map((a) => nameOf(a.vm))).toEqual(['runners-m2xxx']);
    // Crash 2: mark written, nothing after: a fresh process only waits, from the recorded time.
    const marked = apply(crashed, resumed, later(SECOND));
    const again = plan(observedOf(marked), later(MINUTE), seededRandom(3));
    expect(again.actions).toEqual([]);
    expect(again.recheckAt).toEqual(later(SECOND + 10 * MINUTE));
  });

  it('a scaledownwith target drains too', () => {
    const w0 = world(3, { drainTimeout: '10m', policy: 'Explicit' });
    const sdw = planScaleDownWith(
      w0.pool,
      { targets: ['runners-m0xxx'] },
      new Map(w0.vms.map((v) => [nameOf(v), v])),
    );
    if (!sdw.ok || sdw.write === undefined) throw new Error('refused');
    const { w, plans } = converge({ ...w0, pool: sdw.write }, NOW);
    expect(eventsOf(plans, 'updateVm')).toEqual([
      expect.objectContaining({ why: ['drainRequest'] }),
    ]);
    expect(eventsOf(plans, 'deleteVm')).toEqual([]);
    expect(
      w.vms.find((v) => nameOf(v) === 'runners-m0xxx')?.metadata.annotations?.[keys.drainRequested],
    ).toBeDefined();
  });
});

describe('fleet control: protection and cost in whole plans', () => {
  it('a scale-down only protected members could satisfy waits, then proceeds when one is unprotected', () => {
    let w = world(3);
    for (const v of w.vms) w = annotate(w, nameOf(v), { [keys.protected]: 'true' });
    let r = converge(scale(w, 1), NOW);
    expect(eventsOf(r.plans, 'deleteVm')).toEqual([]);
    expect(r.w.pool.status?.heldReplicas).toBe(2);
    expect(r.w.pool.status?.protectedReplicas).toBe(3);
    expect(r.w.pool.status?.conditions?.find((c) => c.type === 'Progressing')?.reason).toBe(
      'ScaleDownBlockedByProtection',
    );
    // L5 while blocked: nothing to do, nothing written.
    const idle = plan(observedOf(r.w), later(MINUTE), seededRandom(1));
    expect([idle.actions, idle.writeStatus, idle.events]).toEqual([[], false, []]);
    w = annotate(r.w, 'runners-m0xxx', { [keys.protected]: 'false' });
    r = converge(w, later(2 * MINUTE));
    expect(eventsOf(r.plans, 'deleteVm').map((a) => a.kind === 'deleteVm' && a.name)).toEqual([
      'runners-m0xxx',
    ]);
    expect(r.w.pool.status?.heldReplicas).toBe(1);
    expect(r.w.pool.status?.protectedReplicas).toBe(2);
  });

  it('rolls a template change out to protected members (protection is about removal only)', () => {
    let w = world(2);
    w = annotate(w, 'runners-m0xxx', { [keys.protected]: 'true' });
    const t = w.pool.spec.virtualMachineTemplate;
    w = {
      ...w,
      pool: {
        ...w.pool,
        spec: {
          ...w.pool.spec,
          virtualMachineTemplate: { ...t, metadata: { labels: { rev: '2' } } },
        },
      },
    };
    const pl = plan(observedOf(w), NOW, seededRandom(1));
    expect(of(pl, 'updateVm').map((a) => [nameOf(a.vm), a.why])).toEqual([
      ['runners-m0xxx', ['rollout']],
      ['runners-m1xxx', ['rollout']],
    ]);
  });

  it('a malformed cost gets a Warning Event once, with the pass that chose victims, never when idle', () => {
    let w = world(3);
    w = annotate(w, 'runners-m0xxx', { [keys.deletionCost]: 'cheap' });
    const idle = plan(observedOf(w), NOW, seededRandom(1));
    expect(idle.events).toEqual([]);
    const { plans } = converge(scale(w, 2), NOW);
    expect(plans.flatMap((p) => p.events)).toEqual([
      expect.objectContaining({ type: 'Warning', reason: 'InvalidDeletionCost' }),
    ]);
  });
});
