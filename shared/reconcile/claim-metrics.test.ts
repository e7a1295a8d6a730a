import { describe, expect, it } from 'vitest';
import { NOW, pool } from '../../test/unit/builders.js';
import { claim, withClaims } from '../../test/unit/claim-builders.js';
import type { Plan } from '../domain/index.js';
import { pendingStatus, statusWrite } from '../domain/index.js';
import type { ClaimObserver } from './claim-metrics.js';
import { observeClaims } from './claim-metrics.js';

function recorder(): ClaimObserver & { pools: unknown[]; bounds: unknown[] } {
  const pools: unknown[] = [];
  const bounds: unknown[] = [];
  return {
    pools,
    bounds,
    pool: (...a) => void pools.push(a),
    bound: (...a) => void bounds.push(a),
    gone: (...a) => void pools.push(['gone', ...a]),
    retain: () => undefined,
  };
}

const planOf = (actions: Plan['actions'], idle: number, status: Plan['status'] = {}): Plan =>
  ({ actions, status: { ...status, idleReplicas: idle } }) as unknown as Plan;

const runners = withClaims(pool(), { minIdle: 0, maxReplicas: 2 });

describe('observeClaims', () => {
  it('reports the phases and idle members of each pass, and the wait of each Bound status written', () => {
    const r = recorder();
    const waiting = claim('w');
    const created = '2025-01-01T11:59:00Z';
    const bound = statusWrite(claim('b', { created }), {
      phase: 'Bound',
      virtualMachineName: 'runners-b',
      boundAt: '2025-01-01T12:00:00Z',
    });
    if (bound === undefined) throw new Error('no write');
    const hook = observeClaims(r, runners, [waiting, claim('b')], planOf([bound], 2));
    expect(r.pools).toEqual([
      ['ci', 'runners', 'pool-uid-1', { Pending: 1, Bound: 1, Expired: 0, Lost: 0 }, 2, true],
    ]);
    hook?.(bound);
    const pending = statusWrite(waiting, pendingStatus(waiting, 'NoIdleMember', 'm', NOW));
    if (pending !== undefined) hook?.(pending);
    expect(r.bounds).toEqual([['ci', 'runners', 60]]);
  });

  it('does nothing without an observer', () => {
    expect(observeClaims(undefined, runners, [], planOf([], 0))).toBeUndefined();
  });

  it('says a pool uses claims when it configures them, a claim names it, or its plan counts one', () => {
    const uses = (p = pool(), claims = [claim('x', { pool: 'desktops' })], status = {}) => {
      const r = recorder();
      observeClaims(r, p, claims, planOf([], 1, status));
      return (r.pools[0] as unknown[])[5];
    };
    expect(uses()).toBe(false);
    expect(uses(pool(), [])).toBe(false);
    expect(uses(runners)).toBe(true);
    expect(uses(pool(), [claim('x')])).toBe(true);
    expect(uses(pool(), [], { claimedReplicas: 1 })).toBe(true);
    expect(uses(pool(), [], { pendingClaims: 1 })).toBe(true);
    // A claim being deleted is not counted in any phase: it does not make the pool use claims.
    expect(uses(pool(), [claim('x', { deleting: true })])).toBe(false);
  });
});
