/**
 * Claims through whole plans: pending reasons and the effective target.
 */
import { describe, expect, it } from 'vitest';
import { NOW, at, seededRandom } from '../../../test/unit/builders.js';
import {
  claim,
  claimIn,
  claimed,
  kinds,
  name,
  run,
  world,
} from '../../../test/unit/claim-builders.js';
import type { World } from '../../../test/unit/world.js';
import { observedOf } from '../../../test/unit/world.js';
import type { Action } from './index.js';
import { plan } from './index.js';

describe('pending claims and the effective target', () => {
  const reason = (w: World, n: string) =>
    claimIn(w, n)?.status?.conditions?.find((c) => c.type === 'Bound')?.reason;

  it('grows the pool for pending claims plus minIdle, within maxReplicas', () => {
    const w0 = {
      ...world(1, { minIdle: 2, maxReplicas: 5 }),
      claims: ['a', 'b', 'c'].map((n) => claim(n)),
    };
    // The pool grew to claimed + pending + minIdle = 5 (the cap); claims bind as members come up.
    const { w } = run(w0);
    expect(w.vms).toHaveLength(5);
    expect(claimed(w).size).toBe(3);
    expect(w.pool.status).toMatchObject({ claimedReplicas: 3, idleReplicas: 2, replicas: 5 });
    // A fourth and a fifth claim take the idle members; a sixth waits at the maximum.
    const more = {
      ...w,
      claims: [...(w.claims ?? []), ...['d', 'e', 'f'].map((n) => claim(n, { created: at(0) }))],
    };
    const { w: full } = run(more);
    expect(full.vms).toHaveLength(5);
    expect(claimed(full).size).toBe(5);
    expect(reason(full, 'f')).toBe('PoolAtMaximum');
  });

  it('keeps spec.replicas as the floor and never counts claims without spec.claims', () => {
    const floor = run({ ...world(4, { minIdle: 1, maxReplicas: 2 }), claims: [claim('a')] }).w;
    expect(floor.vms).toHaveLength(4);
    const plain = run({ ...world(1), claims: [claim('a'), claim('b', { created: at(0) })] }).w;
    expect(plain.vms).toHaveLength(1);
    expect(reason(plain, 'b')).toBe('PoolAtMaximum');
  });

  it('NoIdleMember while the members it grows are starting; written once (L5)', () => {
    const w0 = {
      ...world(1, { maxReplicas: 3 }),
      claims: [claim('a'), claim('b', { created: at(0) })],
    };
    // The first member is taken; the second claim waits for a member being created.
    const p = plan(observedOf(w0), NOW, seededRandom(1));
    const pending = p.actions.find(
      (a) => a.kind === 'claimStatus' && a.claim.metadata.name === 'b',
    ) as Extract<Action, { kind: 'claimStatus' }>;
    expect(pending.claim.status?.conditions?.[0]?.reason).toBe('NoIdleMember');
    expect(kinds(p)).toContain('createVm');
    // The same reason again is not rewritten.
    const b = { ...claim('b', { created: at(0) }), status: pending.claim.status };
    const w1: World = { ...w0, claims: [claim('a'), b] };
    const again = plan(observedOf(w1), NOW, seededRandom(1));
    expect(
      again.actions.filter((a) => a.kind === 'claimStatus' && a.claim.metadata.name === 'b'),
    ).toEqual([]);
  });

  it('a paused pool binds and releases nothing and says PoolPaused', () => {
    const { w: bound } = run({ ...world(2), claims: [claim('a')] });
    const paused: World = {
      ...bound,
      pool: { ...bound.pool, spec: { ...bound.pool.spec, paused: true } },
      claims: [claim('b')],
    };
    const p = plan(observedOf(paused), NOW, seededRandom(1));
    expect(kinds(p)).toEqual(['claimStatus']);
    expect(p.actions[0]).toMatchObject({ phase: 'Pending' });
    expect(
      (p.actions[0] as Extract<Action, { kind: 'claimStatus' }>).claim.status?.conditions?.[0]
        ?.reason,
    ).toBe('PoolPaused');
  });

  it('a scale-down to 0 keeps every claimed member and holds the surplus', () => {
    const { w: bound } = run({ ...world(3), claims: [claim('a'), claim('b', { created: at(0) })] });
    const down: World = {
      ...bound,
      pool: { ...bound.pool, spec: { ...bound.pool.spec, replicas: 0 } },
    };
    const { w } = run(down);
    expect(w.vms.map(name).sort()).toEqual([...claimed(bound).keys()].sort());
    expect(w.pool.status).toMatchObject({ claimedReplicas: 2, heldReplicas: 2 });
    expect(w.pool.status?.conditions?.find((c) => c.type === 'Progressing')?.message).toContain(
      'or claimed',
    );
  });

  it('with spec.claims a scale-down to 0 keeps the claimed and minIdle', () => {
    const { w: bound } = run({ ...world(3, { minIdle: 1 }), claims: [claim('a')] });
    const down: World = {
      ...bound,
      pool: { ...bound.pool, spec: { ...bound.pool.spec, replicas: 0 } },
    };
    const { w } = run(down);
    expect(w.vms).toHaveLength(2);
    expect(claimed(w).size).toBe(1);
  });
});
