/**
 * Warm standby through whole plans on an in-memory API server: refill, promotion first on a
 * scale-up, return on a scale-down, surplus, rollout order; and the new L1 as a property under
 * duplicated, concurrent and crashed reconciles interleaved action by action.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { keys } from '../../api/index.js';
import { NOW, pool, seededRandom } from '../../../test/unit/builders.js';
import type { World } from '../../../test/unit/world.js';
import {
  applyAction,
  converge,
  observedOf,
  readOf,
  scale,
  openIntent,
} from '../../../test/unit/world.js';
import type { Action } from './actions.js';
import { isGate } from './actions.js';
import { isStandby } from '../fleet/index.js';
import { plan } from './index.js';

/** Replicas and standby members by label, as the API server holds them at one instant. */
function census(w: World): { active: number; standby: number } {
  const standby = w.vms.filter(isStandby).length;
  return { active: w.vms.length - standby, standby };
}

/**
 * The world moves between two reads: a member falls back to Pending or comes up again, or an agent
 * changes its deletion cost, so two reconcilers may rank the standby (ready members are promoted
 * first) or the victims differently.
 */
function platform(w: World, dice: () => number): World {
  if (w.vms.length === 0 || dice() < 0.3) return w;
  const i = Math.floor(dice() * w.vms.length);
  const cost = String(Math.floor(dice() * 11) - 5);
  const phase = dice() < 0.5;
  return {
    ...w,
    vms: w.vms.map((v, j) => {
      if (j !== i) return v;
      if (!phase) {
        const annotations = { ...v.metadata.annotations, [keys.deletionCost]: cost };
        return { ...v, metadata: { ...v.metadata, annotations } };
      }
      const up = v.spec.runPolicy === 'AlwaysOff' ? 'Stopped' : 'Running';
      const next = v.status?.phase === 'Pending' ? up : 'Pending';
      return { ...v, status: { ...v.status, phase: next } };
    }),
  };
}

/** One executor's queue: the plan's actions, what it read, and its current group. */
interface Exec {
  readonly actions: Action[];
  readonly read: ReturnType<typeof readOf>;
  group?: { kind: Action['kind']; gate: boolean; failed: boolean };
}

/**
 * Runs two reconcilers on one world as the fencing protocol lets them: A plans and records its
 * intent; after a prefix of A's actions, B reads, plans and records; then both execute, interleaved
 * action by action (groups of one kind in plan order; after a group holding a gate with a failure,
 * the executor stops), and either may crash. L1 is checked after every single action.
 */
function race(w0: World, dice: () => number, now: Date): World {
  const bound = {
    active: Math.max(w0.pool.spec.replicas ?? 0, census(w0).active),
    standby: Math.max(w0.pool.spec.standby?.replicas ?? 0, census(w0).standby),
  };
  const a = plan(observedOf(w0), now, seededRandom(Math.floor(dice() * 1e6)));
  let w: World = a.writeStatus || a.fenced ? { ...w0, pool: { ...w0.pool, status: a.status } } : w0;
  const runOne = (e: Exec): void => {
    const next = e.actions[0]!;
    if (e.group?.kind !== next.kind) {
      if (e.group?.gate === true && e.group.failed) {
        e.actions.length = 0;
        return;
      }
      e.group = { kind: next.kind, gate: false, failed: false };
    }
    e.actions.shift();
    const r = applyAction(w, next, now, e.read);
    w = r.w;
    e.group.gate ||= isGate(next);
    e.group.failed ||= !r.ok;
    const c = census(w);
    expect(c.active).toBeLessThanOrEqual(bound.active);
    expect(c.standby).toBeLessThanOrEqual(bound.standby);
  };
  const execs: Exec[] = [{ actions: [...a.actions], read: readOf(w0) }];
  const prefix = Math.floor(dice() * (a.actions.length + 1));
  for (let i = 0; i < prefix && execs[0]!.actions.length > 0; i++) runOne(execs[0]!);
  w = platform(w, dice);
  const b = plan(observedOf(w), now, seededRandom(Math.floor(dice() * 1e6)));
  const readB = readOf(w);
  if (b.writeStatus || b.fenced) w = { ...w, pool: { ...w.pool, status: b.status } };
  execs.push({ actions: [...b.actions], read: readB });
  const crashAt = dice() < 0.3 ? Math.floor(dice() * 6) : Infinity;
  for (let step = 0; step < crashAt; step++) {
    const open = execs.filter((e) => e.actions.length > 0);
    if (open.length === 0) break;
    runOne(open[Math.floor(dice() * open.length)]!);
  }
  return w;
}

describe('standby L1 as a property', () => {
  // A step changes any of replicas, the standby and the members at once (a scale-down while the
  // standby is short is what returns members to it).
  const step = fc.record({
    scale: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
    standby: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
    remove: fc.option(fc.nat(9), { nil: undefined }),
  });
  const arb = fc.record({
    replicas: fc.integer({ min: 0, max: 4 }),
    standby: fc.integer({ min: 0, max: 3 }),
    state: fc.constantFrom<'Stopped' | 'Running'>('Stopped', 'Running'),
    reuse: fc.boolean(),
    seed: fc.integer(),
    steps: fc.array(step, { minLength: 1, maxLength: 5 }),
  });

  it('replicas ≤ spec.replicas and standby ≤ standby.replicas at every instant; converges; L5', () => {
    fc.assert(
      fc.property(arb, (s) => {
        let seed = s.seed;
        const dice = (): number => {
          seed = (seed * 1103515245 + 12345) & 0x7fffffff;
          return seed / 0x7fffffff;
        };
        const p = pool({ replicas: s.replicas });
        p.spec.standby = { replicas: s.standby, state: s.state, reuseOnScaleDown: s.reuse };
        let w = converge({ pool: p, vms: [], disks: [] }, NOW).w;
        for (const st of s.steps) {
          if (st.scale !== undefined) w = scale(w, st.scale);
          const standby = { ...w.pool.spec.standby!, replicas: st.standby ?? s.standby };
          if (st.standby !== undefined)
            w = { ...w, pool: { ...w.pool, spec: { ...w.pool.spec, standby } } };
          const gone = st.remove;
          if (gone !== undefined && w.vms.length > 0)
            w = { ...w, vms: w.vms.filter((_, i) => i !== gone % w.vms.length) };
          for (let round = 0; round < 6; round++) w = race(w, dice, NOW);
          // Then a lone reconciler finishes the job, and a converged pool writes nothing (L5).
          w = converge(w, NOW, 12).w;
          const c = census(w);
          expect(c).toEqual({
            active: w.pool.spec.replicas,
            standby: w.pool.spec.standby?.replicas,
          });
          expect(openIntent(w)).toBeUndefined();
          const idle = plan(observedOf(w), NOW, seededRandom(7));
          expect([idle.actions.length, idle.writeStatus]).toEqual([0, false]);
        }
      }),
      { numRuns: 200 },
    );
  }, 60_000);
});
