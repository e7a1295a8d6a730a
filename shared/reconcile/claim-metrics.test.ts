import { describe, expect, it } from 'vitest';
import { NOW } from '../../test/unit/builders.js';
import { claim } from '../../test/unit/claim-builders.js';
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
  };
}

const planOf = (actions: Plan['actions'], idle: number): Plan =>
  ({ actions, status: { idleReplicas: idle } }) as unknown as Plan;

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
    const hook = observeClaims(r, 'ci', 'runners', [waiting, claim('b')], planOf([bound], 2));
    expect(r.pools).toEqual([['ci', 'runners', { Pending: 1, Bound: 1, Expired: 0, Lost: 0 }, 2]]);
    hook?.(bound);
    const pending = statusWrite(waiting, pendingStatus(waiting, 'NoIdleMember', 'm', NOW));
    if (pending !== undefined) hook?.(pending);
    expect(r.bounds).toEqual([['ci', 'runners', 60]]);
  });

  it('does nothing without an observer', () => {
    expect(observeClaims(undefined, 'ci', 'runners', [], planOf([], 0))).toBeUndefined();
  });
});
