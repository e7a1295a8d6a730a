import { describe, expect, it } from 'vitest';
import { createFunctionMetrics } from './metrics.js';

describe('claim metrics', () => {
  it('renders claims by phase (every phase, 0 when none), idle members and bind latency', () => {
    const m = createFunctionMetrics();
    m.claims.pool('ci', 'runners', 'u1', { Bound: 2, Pending: 1 }, 3, true);
    m.claims.pool('ci', 'runners', 'u1', { Bound: 1 }, 2, true);
    m.claims.bound('ci', 'runners', 0.2);
    m.claims.bound('ci', 'runners', 45);
    const text = m.registry.render();
    expect(text).toContain('# TYPE vmpool_claims gauge');
    expect(text).toContain('vmpool_claims{namespace="ci",pool="runners",phase="Bound"} 1');
    expect(text).toContain('vmpool_claims{namespace="ci",pool="runners",phase="Pending"} 0');
    expect(text).toContain('vmpool_claims{namespace="ci",pool="runners",phase="Lost"} 0');
    expect(text).toContain('vmpool_idle_members{namespace="ci",pool="runners"} 2');
    expect(text).toContain('# TYPE vmpool_claim_bind_seconds histogram');
    expect(text).toContain(
      'vmpool_claim_bind_seconds_bucket{namespace="ci",pool="runners",le="0.25"} 1',
    );
    expect(text).toContain(
      'vmpool_claim_bind_seconds_bucket{namespace="ci",pool="runners",le="60"} 2',
    );
    expect(text).toContain('vmpool_claim_bind_seconds_count{namespace="ci",pool="runners"} 2');
  });

  it('a reconcile that did not read the claims updates the idle members and keeps the phases', () => {
    const m = createFunctionMetrics();
    m.claims.pool('ci', 'runners', 'u1', { Expired: 2 }, 3, true);
    m.claims.pool('ci', 'runners', 'u1', undefined, 1, true);
    const text = m.registry.render();
    expect(text).toContain('vmpool_claims{namespace="ci",pool="runners",phase="Expired"} 2');
    expect(text).toContain('vmpool_claims{namespace="ci",pool="runners",phase="Bound"} 0');
    expect(text).toContain('vmpool_idle_members{namespace="ci",pool="runners"} 1');
  });

  it('a pool that never used claims has no series, at any number of pools', () => {
    const m = createFunctionMetrics();
    const empty = m.registry.render();
    for (let i = 0; i < 10_000; i++) m.claims.pool('ci', `pool-${i}`, 'u1', {}, 2, false);
    expect(m.registry.render()).toBe(empty);
  });

  it("keeps a pool's series once it used claims, at 0 when it stops, until the pool is gone", () => {
    const m = createFunctionMetrics();
    m.claims.pool('ci', 'runners', 'u1', { Bound: 1 }, 2, true);
    m.claims.bound('ci', 'runners', 3);
    m.claims.pool('ci', 'runners', 'u1', {}, 0, false);
    let text = m.registry.render();
    expect(text).toContain('vmpool_claims{namespace="ci",pool="runners",phase="Bound"} 0');
    expect(text).toContain('vmpool_idle_members{namespace="ci",pool="runners"} 0');
    m.claims.gone('ci', 'runners');
    text = m.registry.render();
    expect(text).not.toContain('pool="runners"');
    expect(text).toContain('# TYPE vmpool_claims gauge');
    // A report of it read before it went (a resync window's list) brings nothing back.
    m.claims.pool('ci', 'runners', 'u1', { Bound: 1 }, 2, true);
    expect(m.registry.render()).toBe(text);
    // Created again without claims: nothing comes back.
    m.claims.pool('ci', 'runners', 'u2', {}, 2, false);
    expect(m.registry.render()).toBe(text);
  });

  it('a pool created again under the name of one that used claims starts without its series', () => {
    const m = createFunctionMetrics();
    m.claims.pool('ci', 'runners', 'u1', { Bound: 1 }, 2, true);
    m.claims.bound('ci', 'runners', 3);
    // Its delete was seen by another instance; here the next report is of the new pool.
    m.claims.pool('ci', 'runners', 'u2', {}, 2, false);
    expect(m.registry.render()).not.toContain('pool="runners"');
    m.claims.bound('ci', 'runners', 3);
    expect(m.registry.render()).not.toContain('pool="runners"');
  });

  it('keeps the series of the pools a complete listing saw, and drops the others', () => {
    const m = createFunctionMetrics();
    m.claims.pool('ci', 'runners', 'u1', { Bound: 1 }, 2, true);
    m.claims.pool('ci', 'desktops', 'u2', { Pending: 1 }, 0, true);
    m.claims.retain(new Set(['ci/runners']));
    const text = m.registry.render();
    expect(text).toContain('vmpool_idle_members{namespace="ci",pool="runners"} 2');
    expect(text).not.toContain('pool="desktops"');
  });
});
