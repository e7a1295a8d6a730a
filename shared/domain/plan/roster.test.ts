import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { at, MINUTE, NOW, observed, pool, SECOND, steady } from '../../../test/unit/builders.js';
import { observe } from './observe.js';
import { splitStandby } from './partition.js';
import { nextAvailable, promotable, statusFacts } from './roster.js';

const standby = (created: number, o: { phase?: string; stale?: boolean } = {}) => ({
  created: at(created),
  phase: o.phase ?? 'Stopped',
  labels: { [keys.standby]: 'true', ...(o.stale === true ? { [keys.templateHash]: 'old' } : {}) },
});

function standbyPool() {
  const p = pool({ replicas: 1 });
  p.spec.standby = { replicas: 3, state: 'Stopped' };
  return p;
}

describe('promotable', () => {
  it('ranks ready standby members on the current revision first, then the oldest, then by name', () => {
    const p = standbyPool();
    const split = splitStandby(
      observe(
        observed(p, [
          steady(p, 'runners-young', standby(-MINUTE)),
          steady(p, 'runners-stale', standby(-9 * MINUTE, { stale: true })),
          steady(p, 'runners-start', standby(-8 * MINUTE, { phase: 'Starting' })),
          steady(p, 'runners-olden', standby(-7 * MINUTE)),
        ]),
      ),
    );
    expect(promotable(split).map((m) => m.metadata.name)).toEqual([
      'runners-olden',
      'runners-young',
      'runners-start',
      'runners-stale',
    ]);
  });
});

describe('statusFacts', () => {
  it('counts the standby (ready, outdated) only when a standby is set', () => {
    const p = standbyPool();
    const view = observe(
      observed(p, [
        steady(p, 'runners-ready', standby(-MINUTE)),
        steady(p, 'runners-stale', standby(-MINUTE, { stale: true })),
        steady(p, 'runners-start', standby(-MINUTE, { phase: 'Starting' })),
      ]),
    );
    const facts = statusFacts(view, splitStandby(view), { unhealthy: 0 });
    expect(facts).toEqual({ standby: { replicas: 3, ready: 2, outdated: 1 } });
    const plain = observe(observed(pool(), []));
    expect(statusFacts(plain, splitStandby(plain), { unhealthy: 0 })).toEqual({});
  });
});

describe('nextAvailable', () => {
  it('is the earliest time a Running replica has been Running minReadySeconds, if ahead', () => {
    const p = pool({ replicas: 2 });
    p.spec.minReadySeconds = 60;
    const view = observe(
      observed(p, [
        steady(p, 'runners-aaaaa', { created: at(-30 * SECOND) }),
        steady(p, 'runners-bbbbb', { created: at(-50 * SECOND) }),
        steady(p, 'runners-ccccc', { created: at(-5 * MINUTE) }),
      ]),
    );
    const split = splitStandby(view);
    expect(nextAvailable(split, NOW)).toBe(NOW.getTime() + 10 * SECOND);
    expect(nextAvailable(split, new Date(NOW.getTime() + MINUTE))).toBeUndefined();
    const none = splitStandby(observe(observed(pool(), [steady(pool(), 'runners-aaaaa')])));
    expect(nextAvailable(none, NOW)).toBeUndefined();
  });
});
