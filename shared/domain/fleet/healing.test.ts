/**
 * Healing's budget and circuit breaker (issue 23 item 5) through whole plans.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  MINUTE,
  NOW,
  at,
  observed,
  pool,
  seededRandom,
  steady,
  actionsOf as of,
} from '../../../test/unit/builders.js';
import type { Plan } from '../plan/index.js';
import { maxUnavailableOf, maxUnhealthyOf } from './budget.js';
import { plan } from '../plan/index.js';

const healing = (pl: Plan) => pl.status.conditions?.find((c) => c.type === 'Healing');

function healingPool(replicas: number, healing: { maxUnhealthy?: number | string } = {}) {
  const p = pool({ replicas });
  p.spec.healing = { startupTimeout: '5m', ...healing };
  return p;
}

/** `sick` members stuck Starting for 10 minutes (past the 5m timeout), the rest Running. */
function members(p: VirtualMachinePool, total: number, sick: number, protect = 0) {
  return Array.from({ length: total }, (_, i) => {
    const name = `runners-${String.fromCharCode(98 + i).repeat(5)}`;
    const annotations = i < protect ? { [keys.protected]: 'true' } : undefined;
    const m = steady(p, name, {
      phase: i < sick ? 'Starting' : 'Running',
      created: at(-10 * MINUTE),
      ...(annotations === undefined ? {} : { annotations }),
    });
    m.vm.status = { ...m.vm.status, stats: { phasesTransitions: [] } };
    return m;
  });
}

const healed = (pl: Plan) => of(pl, 'deleteVm').filter((d) => d.why === 'unhealthy').length;

describe('healing budget: rollout.maxUnavailable, default 25% with healing', () => {
  it('without maxUnavailable replaces at most a quarter of the members in round one', () => {
    const p = healingPool(8);
    const pl = plan(observed(p, members(p, 8, 3)), NOW, seededRandom(1));
    expect(healed(pl)).toBe(2);
    expect(pl.status.unhealthyReplicas).toBe(3);
    expect(healing(pl)).toMatchObject({ status: 'True', reason: 'Replacing' });
  });

  it('at least one, and an explicit maxUnavailable wins over the default', () => {
    const one = healingPool(1);
    expect(healed(plan(observed(one, members(one, 1, 1)), NOW, seededRandom(1)))).toBe(1);
    const p = healingPool(8);
    p.spec.rollout = { maxUnavailable: 3 };
    expect(healed(plan(observed(p, members(p, 8, 3)), NOW, seededRandom(1)))).toBe(3);
  });

  it('maxUnavailableOf: 25% of replicas plus standby with healing, all at once without', () => {
    expect(maxUnavailableOf(healingPool(8))).toBe(2);
    expect(maxUnavailableOf(healingPool(3))).toBe(1);
    const standby = healingPool(6);
    standby.spec.standby = { replicas: 6, state: 'Stopped' };
    expect(maxUnavailableOf(standby)).toBe(3);
    expect(maxUnavailableOf(pool({ replicas: 8 }))).toBe(Infinity);
  });
});

describe('healing circuit breaker: spec.healing.maxUnhealthy, default 50%', () => {
  it('an all-unhealthy pool replaces none and says why, with the numbers and the fix', () => {
    const p = healingPool(4);
    const pl = plan(observed(p, members(p, 4, 4)), NOW, seededRandom(1));
    expect(of(pl, 'deleteVm')).toEqual([]);
    expect(pl.status.intent?.deletes ?? []).toEqual([]);
    expect(pl.events).toEqual([]);
    expect(pl.status.unhealthyReplicas).toBe(4);
    const c = healing(pl);
    expect(c).toMatchObject({ status: 'False', reason: 'TooManyUnhealthy' });
    expect(c?.message).toContain('4 of 4 replicas are not Running within startupTimeout 5m');
    expect(c?.message).toContain('spec.healing.maxUnhealthy 50% (default) tolerates (2)');
    expect(c?.message).toContain('replaces none of them');
    expect(c?.message).toContain('raise spec.healing.maxUnhealthy');
    // No back-off round is recorded: nothing was replaced.
    expect(pl.status.healing).toBeUndefined();
  });

  it('trips only above the threshold: at it, healing goes on within the budget', () => {
    const p = healingPool(4);
    const at2 = plan(observed(p, members(p, 4, 2)), NOW, seededRandom(1));
    expect(healed(at2)).toBe(1);
    expect(healing(at2)?.reason).toBe('Replacing');
    const at3 = plan(observed(p, members(p, 4, 3)), NOW, seededRandom(1));
    expect(healed(at3)).toBe(0);
    expect(healing(at3)?.reason).toBe('TooManyUnhealthy');
  });

  it('an integer threshold, and protected unhealthy members count as unhealthy', () => {
    const p = healingPool(10, { maxUnhealthy: 3 });
    const pl = plan(observed(p, members(p, 10, 4, 2)), NOW, seededRandom(1));
    expect(healed(pl)).toBe(0);
    expect(healing(pl)?.message).toContain('4 of 10 replicas');
    expect(healing(pl)?.message).toContain('spec.healing.maxUnhealthy 3 tolerates (3)');
    expect(healing(pl)?.message).toContain('2 protected unhealthy replicas are kept');
    const loose = healingPool(10, { maxUnhealthy: '100%' });
    expect(healed(plan(observed(loose, members(loose, 10, 4)), NOW, seededRandom(1)))).toBe(2);
  });

  it('a stable tripped pool writes nothing more (L5)', () => {
    const p = healingPool(4);
    const ms = members(p, 4, 4);
    const first = plan(observed(p, ms), NOW, seededRandom(1));
    const again = plan(observed({ ...p, status: first.status }, ms), NOW, seededRandom(1));
    expect(again.actions).toEqual([]);
    expect(again.writeStatus).toBe(false);
  });

  it('maxUnhealthyOf: a percentage rounded down, at least 1; an integer as written', () => {
    expect(maxUnhealthyOf(healingPool(4))).toBe(2);
    expect(maxUnhealthyOf(healingPool(5))).toBe(2);
    expect(maxUnhealthyOf(healingPool(1))).toBe(1);
    expect(maxUnhealthyOf(healingPool(5, { maxUnhealthy: '10%' }))).toBe(1);
    expect(maxUnhealthyOf(healingPool(5, { maxUnhealthy: 4 }))).toBe(4);
  });
});
