/** The chaos observer's judge of L1 against the desire at each instant (test/chaos/desire.ts). */
import { describe, expect, it } from 'vitest';
import type { Addition, PoolSeen } from '../chaos/desire.js';
import { DesireLedger, desireOf } from '../chaos/desire.js';

const pool = (rv: number, spec: PoolSeen['spec'], deleting = false): PoolSeen => ({
  metadata: {
    name: 'p',
    resourceVersion: String(rv),
    ...(deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
  },
  spec,
});
const create = (rv: number, replicas: number, spares = 0): Addition => ({
  pool: 'p',
  name: `p-${rv}`,
  rv,
  kind: 'create',
  replicas,
  spares,
});

describe('DesireLedger', () => {
  it('judges each create against the desire in force at its revision, not the peak', () => {
    const l = new DesireLedger(500);
    l.desire('p', desireOf(pool(1, { replicas: 2 }), false, 1));
    l.desire('p', desireOf(pool(5, { replicas: 4 }), false, 5));
    l.add(create(3, 2));
    l.add(create(4, 3)); // 3 members while the desire is still 2: no drop to excuse it
    l.add(create(6, 4));
    expect(l.check(10)).toEqual([
      'L1 at each instant: p: replicas 3 after create p-4 at rv 4, desire 2 since rv 1',
    ]);
    expect(l.checked).toBe(3);
  });

  it('lets at most one burst of creates above the desire after a drop (scale back, pause, deletion)', () => {
    for (const drop of [
      desireOf(pool(10, { replicas: 2 }), false, 10),
      desireOf(pool(10, { replicas: 60, paused: true }), false, 10),
      desireOf(pool(10, { replicas: 60 }, true), false, 10),
      desireOf(pool(9, { replicas: 60 }), true, 10),
    ]) {
      const l = new DesireLedger(3);
      l.desire('p', desireOf(pool(1, { replicas: 60 }), false, 1));
      l.desire('p', drop);
      for (let i = 0; i < 4; i++) l.add(create(11 + i, 21 + i));
      const out = l.check(20);
      expect(out).toHaveLength(1);
      expect(out[0]).toMatch(/^L1 burst: p: replicas 24 after create p-14 at rv 14, .* burst 3$/);
      expect(l.graced).toBe(3);
    }
  });

  it('bounds a pool with claims by max(spec.replicas, claims.maxReplicas), 0 once paused', () => {
    expect(desireOf(pool(1, { replicas: 0, claims: { maxReplicas: 5 } }), false, 1)).toEqual({
      rv: 1,
      replicas: 5,
    });
    expect(desireOf(pool(2, { replicas: 7, claims: { maxReplicas: 5 } }), false, 2).replicas).toBe(
      7,
    );
    const paused = pool(3, { replicas: 2, paused: true, claims: { maxReplicas: 5 } });
    expect(desireOf(paused, false, 3).replicas).toBe(0);
    const l = new DesireLedger(500);
    l.desire('p', desireOf(pool(1, { replicas: 0, claims: { maxReplicas: 2 } }), false, 1));
    l.add(create(2, 1));
    l.add(create(3, 2));
    l.add(create(4, 3));
    expect(l.check(10)).toEqual([
      'L1 at each instant: p: replicas 3 after create p-4 at rv 4, desire 2 since rv 1',
    ]);
  });

  it('waits for the pool history to be complete up to an addition before judging it', () => {
    const l = new DesireLedger(500);
    l.desire('p', desireOf(pool(1, { replicas: 1 }), false, 1));
    l.add(create(7, 2));
    expect(l.check(6)).toEqual([]);
    expect(l.checked).toBe(0);
    // The scale-up to 2 at rv 6 arrives late on the pool watch: the create was within the desire.
    l.desire('p', desireOf(pool(6, { replicas: 2 }), false, 6));
    expect(l.check(7)).toEqual([]);
    expect(l.checked).toBe(1);
  });

  it('counts the standby apart when the pool has one', () => {
    const l = new DesireLedger(500);
    l.desire('p', desireOf(pool(1, { replicas: 2, standby: { replicas: 1 } }), false, 1));
    l.add(create(2, 2, 1)); // 2 replicas and 1 standby member: within both
    l.add({ pool: 'p', name: 's', rv: 3, kind: 'standby', replicas: 2, spares: 2 });
    expect(l.check(3)).toEqual([
      'L1 at each instant: p: standby 2 after standby s at rv 3, desire 1 since rv 1',
    ]);
  });

  it('counts the creates around the first drop of the desire, until it rises again', () => {
    const l = new DesireLedger(8);
    l.desire('p', desireOf(pool(1, { replicas: 1 }), false, 1));
    l.desire('p', desireOf(pool(2, { replicas: 60 }), false, 2));
    l.desire('p', desireOf(pool(6, { replicas: 2 }), false, 6));
    l.desire('p', desireOf(pool(9, { replicas: 5 }), false, 9));
    for (const rv of [1, 3, 4, 5, 7, 8, 10]) l.add(create(rv, rv));
    // After rv 2: 3 creates up to the drop at 6, 2 after it, none counted once the desire rose at 9.
    expect(l.createsAroundDrop('p', 2, 60, 2)).toEqual({ dropRv: 6, before: 3, after: 2 });
    // No drop below the peak after rv 9.
    expect(l.createsAroundDrop('p', 9, 60, 2)).toEqual({
      dropRv: Number.POSITIVE_INFINITY,
      before: 1,
      after: 0,
    });
  });
});
