/**
 * The due GC pass's absolute goal (≤ 2 s) holds at the size it was set for; above it the raw delete
 * loop alone is slower than that, so the time is context and the write-rate row judges the pass.
 */
import { describe, expect, it } from 'vitest';
import { DUE_GOAL_POOLS, dueGoal } from '../../bench/gc.js';

const pass = (pools: number, ms: number): Parameters<typeof dueGoal>[0] => ({ pools, due: { ms } });

describe('dueGoal', () => {
  it('judges a pass at the goal size against 2 s', () => {
    expect(dueGoal(pass(DUE_GOAL_POOLS, 1999))).toEqual({ goal: '≤ 2 s', pass: true });
    expect(dueGoal(pass(DUE_GOAL_POOLS, 2001))).toEqual({ goal: '≤ 2 s', pass: false });
  });

  it('gives a larger pass its time as context, with no verdict', () => {
    const g = dueGoal(pass(5000, 19_000));
    expect(g.pass).toBeUndefined();
    expect(g.goal).toMatch(/^context: .*500 pools.*5000.*raw loop/);
  });
});
