import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import {
  at,
  MINUTE,
  NOW,
  observed,
  pool,
  seededRandom,
  steady,
} from '../../../test/unit/builders.js';
import { decideCount } from './count.js';
import { decideLeave } from './leave.js';
import { observe } from './observe.js';

/** Three members, the newest recorded as a victim, with the given annotations on it. */
function leaving(drainTimeout: string | undefined, annotations: Record<string, string> = {}) {
  const p = pool({
    replicas: 2,
    status: { intent: { deletes: [{ name: 'runners-ccccc', uid: 'uid-runners-ccccc' }] } },
  });
  if (drainTimeout !== undefined) p.spec.scaleDown = { drainTimeout };
  const ms = [
    steady(p, 'runners-aaaaa', { created: at(-30 * MINUTE) }),
    steady(p, 'runners-bbbbb', { created: at(-20 * MINUTE) }),
    steady(p, 'runners-ccccc', { created: at(-10 * MINUTE), annotations }),
  ];
  const view = observe(observed(p, ms));
  const { departures } = decideCount({ ...view, rand: seededRandom(1) });
  return decideLeave({ pool: view.pool, departures, now: NOW });
}

describe('decideLeave', () => {
  it('without drainTimeout deletes at once (the reference behaviour)', () => {
    const l = leaving(undefined);
    expect(l.deletes).toEqual([
      { kind: 'deleteVm', name: 'runners-ccccc', uid: 'uid-runners-ccccc', why: 'scaleDown' },
    ]);
    expect(l.drainRequests).toEqual([]);
    expect(l.draining).toBe(0);
    expect(l.recheckAt).toBeUndefined();
  });

  it('with drainTimeout asks first: drain-requested stamped now, recheck at the deadline', () => {
    const l = leaving('10m');
    expect(l.deletes).toEqual([]);
    expect(l.drainRequests).toHaveLength(1);
    const r = l.drainRequests[0]!;
    expect(r.why).toEqual(['drainRequest']);
    expect(r.drainTimeout).toBe('10m');
    expect(r.vm.metadata.annotations?.[keys.drainRequested]).toBe('2025-01-01T12:00:00Z');
    expect(l.draining).toBe(1);
    expect(l.recheckAt).toEqual(new Date(NOW.getTime() + 10 * MINUTE));
  });

  it('waits while draining: no action, still draining, recheck at the deadline', () => {
    const l = leaving('10m', { [keys.drainRequested]: at(-4 * MINUTE) });
    expect(l.deletes).toEqual([]);
    expect(l.drainRequests).toEqual([]);
    expect(l.draining).toBe(1);
    expect(l.recheckAt).toEqual(new Date(NOW.getTime() + 6 * MINUTE));
  });

  it('deletes once drained', () => {
    const l = leaving('10m', { [keys.drainRequested]: at(-4 * MINUTE), [keys.drained]: 'true' });
    expect(l.deletes).toEqual([
      {
        kind: 'deleteVm',
        name: 'runners-ccccc',
        uid: 'uid-runners-ccccc',
        why: 'scaleDown',
        drain: { outcome: 'drained', timeout: '10m' },
      },
    ]);
    expect(l.draining).toBe(0);
  });

  it('deletes when the timeout has passed', () => {
    const l = leaving('10m', { [keys.drainRequested]: at(-10 * MINUTE) });
    expect(l.deletes[0]?.drain).toEqual({ outcome: 'timedOut', timeout: '10m' });
    expect(l.draining).toBe(0);
    expect(l.recheckAt).toBeUndefined();
  });
});
