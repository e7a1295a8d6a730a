/**
 * Fleet control through whole plans: scale-in protection, deletion cost, spread, drain before
 * removal; flows pass after pass on an in-memory API server, and the laws as properties.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ScaleDownPolicy, VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  at,
  MINUTE,
  NOW,
  SECOND,
  pool,
  seededRandom,
  steady,
} from '../../../test/unit/builders.js';
import type { World } from '../../../test/unit/world.js';
import { annotate, apply, converge, observedOf, scale } from '../../../test/unit/world.js';
import type { Action } from './actions.js';
import { isFenced } from './actions.js';
import {
  nameOf,
  planScaleDownWith,
  recordedTargets,
  isProtected,
  rankVictims,
} from '../fleet/index.js';
import type { Plan } from './index.js';
import { plan } from './index.js';

const of = <K extends Action['kind']>(pl: Plan, kind: K) =>
  pl.actions.filter((a): a is Extract<Action, { kind: K }> => a.kind === kind);
const later = (ms: number): Date => new Date(NOW.getTime() + ms);

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
    expect(w.pool.status?.intent).toBeUndefined();
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
    expect(w.pool.status?.intent).toBeUndefined();
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

describe('fleet control: laws as properties', () => {
  const member = fc.record({
    protect: fc.boolean(),
    cost: fc.constantFrom(undefined, '-100', '0', '5', 'oops'),
    node: fc.constantFrom(undefined, 'n1', 'n2', 'n3'),
  });
  const step = fc.oneof(
    fc.record({ kind: fc.constant('scale' as const), to: fc.integer({ min: 0, max: 7 }) }),
    fc.record({ kind: fc.constant('protect' as const), i: fc.nat(7), on: fc.boolean() }),
    fc.record({ kind: fc.constant('drained' as const), i: fc.nat(7) }),
    fc.record({ kind: fc.constant('wait' as const), s: fc.integer({ min: 1, max: 90 }) }),
    fc.record({ kind: fc.constant('target' as const), i: fc.nat(7) }),
  );
  const arb = fc.record({
    members: fc.array(member, { minLength: 1, maxLength: 6 }),
    policy: fc.constantFrom<ScaleDownPolicy>('NewestFirst', 'OldestFirst', 'Explicit'),
    drain: fc.constantFrom(undefined, '30s'),
    steps: fc.array(step, { minLength: 1, maxLength: 6 }),
  });

  it('victims are the ranking’s; protected never deleted; drained or timed out before deletion; L1; L5', () => {
    fc.assert(
      fc.property(arb, (s) => {
        const p = pool({ replicas: s.members.length, scaleDownPolicy: s.policy });
        if (s.drain !== undefined) p.spec.scaleDown = { drainTimeout: s.drain };
        const ms = s.members.map((m, i) => {
          const x = steady(p, `runners-m${i}xxx`, {
            created: at(-(10 - i) * MINUTE),
            annotations: {
              ...(m.protect ? { [keys.protected]: 'true' } : {}),
              ...(m.cost === undefined ? {} : { [keys.deletionCost]: m.cost }),
            },
          });
          if (m.node !== undefined) x.vm.status = { ...x.vm.status, nodeName: m.node };
          return x;
        });
        let w: World = { pool: p, vms: ms.map((m) => m.vm), disks: ms.flatMap((m) => m.disks) };
        let now = NOW;
        for (const st of s.steps) {
          const vmAt = (i: number): VirtualMachine | undefined =>
            w.vms[i % Math.max(1, w.vms.length)];
          if (st.kind === 'scale' && s.policy !== 'Explicit') w = scale(w, st.to);
          if (st.kind === 'scale' && s.policy === 'Explicit' && st.to > (w.pool.spec.replicas ?? 0))
            w = scale(w, st.to);
          if (st.kind === 'protect' && vmAt(st.i))
            w = annotate(w, nameOf(vmAt(st.i)!), { [keys.protected]: String(st.on) });
          if (st.kind === 'drained' && vmAt(st.i))
            w = annotate(w, nameOf(vmAt(st.i)!), { [keys.drained]: 'true' });
          if (st.kind === 'wait') now = new Date(now.getTime() + st.s * SECOND);
          if (st.kind === 'target' && vmAt(st.i)) {
            const r = planScaleDownWith(
              w.pool,
              { targets: [nameOf(vmAt(st.i)!)] },
              new Map(w.vms.map((v) => [nameOf(v), v])),
            );
            if (r.ok && r.write !== undefined) w = { ...w, pool: r.write };
          }
          for (let pass = 0; pass < 10; pass++) {
            const obs = observedOf(w);
            const pl = plan(obs, now, seededRandom(pass + 7));
            checkLaws(w, pl, now, s.drain);
            if (pl.actions.length === 0 && !pl.writeStatus) {
              // L5: once idle, idle again (no writes, no events).
              const again = plan(obs, now, seededRandom(99));
              expect([again.actions.length, again.writeStatus, again.events.length]).toEqual([
                0,
                false,
                0,
              ]);
              break;
            }
            w = apply(w, pl, now);
          }
        }
      }),
      { numRuns: 300 },
    );
    // 300 whole reconciles take about 3 s alone; a busy 2-core machine stretched one past 5 s.
  }, 30_000);
});

/** The laws one plan must keep, judged on the state it was made from. */
function checkLaws(w: World, pl: Plan, now: Date, drain: string | undefined): void {
  const byName = new Map(w.vms.map((v) => [nameOf(v), v]));
  const desired = w.pool.spec.replicas ?? 0;
  const pending = w.pool.status?.intent?.creates?.filter((n) => !byName.has(n)).length ?? 0;
  const count = w.vms.length + pending;
  // L1: no create unless below spec.replicas, counting draining members: never a replacement.
  const fresh = of(pl, 'createVm').filter(
    (c) => !(w.pool.status?.intent?.creates ?? []).includes(nameOf(c.vm)),
  );
  expect(fresh.length).toBeLessThanOrEqual(Math.max(0, desired - count));
  // A scale-up takes every draining member back before it creates anything.
  if (fresh.length > 0) expect(pl.status.drainingReplicas).toBe(0);
  for (const d of of(pl, 'deleteVm')) {
    const v = byName.get(d.name);
    // A protected member is never deleted by a scale-down or a scaledownwith.
    expect(v !== undefined && isProtected(v)).toBe(false);
    if (drain !== undefined && v !== undefined) {
      // Deleted only after drained or timed out.
      const asked = v.metadata.annotations?.[keys.drainRequested];
      expect(asked).toBeDefined();
      const drained = v.metadata.annotations?.[keys.drained] === 'true';
      const timedOut = now.getTime() >= Date.parse(asked!) + 30 * SECOND;
      expect(drained || timedOut).toBe(true);
    }
  }
  // New victims are exactly the ranking's first picks among the unprotected staying members.
  const recorded = new Set((w.pool.status?.intent?.deletes ?? []).map((d) => d.name));
  const chosen = (pl.status.intent?.deletes ?? [])
    .map((d) => d.name)
    .filter((n) => !recorded.has(n));
  if (chosen.length > 0 && w.pool.spec.scaleDownPolicy !== 'Explicit') {
    const targets = recordedTargets(w.pool).map((t) => t.name);
    const leaving = new Set(
      [...recorded, ...targets].filter((n) => {
        const v = byName.get(n);
        return v !== undefined && !isProtected(v);
      }),
    );
    const staying = w.vms.filter(
      (v) => v.metadata.deletionTimestamp === undefined && !leaving.has(nameOf(v)),
    );
    const ranked = rankVictims(
      staying.filter((v) => !isProtected(v)),
      w.pool.spec.scaleDownPolicy === 'OldestFirst' ? 'OldestFirst' : 'NewestFirst',
      staying,
      chosen.length,
    );
    expect(chosen).toEqual(ranked.map((r) => nameOf(r.vm)));
  }
}
