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
  actionsOf as of,
} from '../../../test/unit/builders.js';
import type { World } from '../../../test/unit/world.js';
import { annotate, apply, observedOf, scale } from '../../../test/unit/world.js';
import {
  nameOf,
  planScaleDownWith,
  recordedTargets,
  isProtected,
  rankVictims,
} from '../fleet/index.js';
import type { Plan } from './index.js';
import { plan } from './index.js';

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
