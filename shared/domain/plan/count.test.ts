import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { decideCount } from './count.js';
import { observe } from './observe.js';
import {
  at,
  HOUR,
  MINUTE,
  observed,
  pool,
  seededRandom,
  steady,
} from '../../../test/unit/builders.js';

const names = (xs: readonly { name: string }[]) => xs.map((x) => x.name);

describe('decideCount', () => {
  it('creates recorded pending names first, then fresh ones for the rest of the deficit', () => {
    const p = pool({ replicas: 3, status: { intent: { creates: ['runners-ppppp'] } } });
    const c = decideCount({
      ...observe(observed(p, [steady(p, 'runners-aaaaa')])),
      rand: seededRandom(1),
    });
    expect(c.creates).toHaveLength(2);
    expect(c.creates[0]).toBe('runners-ppppp');
    expect(c.creates[1]).toMatch(/^runners-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(c.victims).toEqual([]);
  });

  it('keeps recorded victims first and deletes targets that are not victims after them', () => {
    const p = pool({
      replicas: 2,
      annotations: {
        [keys.scaleDownTargets]: JSON.stringify([
          { name: 'runners-ccccc', uid: 'uid-runners-ccccc' },
          { name: 'runners-zzzzz', uid: 'uid-runners-zzzzz' },
        ]),
      },
      status: { intent: { deletes: [{ name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' }] } },
    });
    const members = [
      steady(p, 'runners-aaaaa', { created: at(-3 * HOUR) }),
      steady(p, 'runners-bbbbb', { created: at(-2 * HOUR) }),
      steady(p, 'runners-ccccc', { created: at(-HOUR) }),
      steady(p, 'runners-ddddd', { created: at(-HOUR / 2) }),
    ];
    const c = decideCount({ ...observe(observed(p, members)), rand: seededRandom(1) });
    expect(names(c.victims)).toEqual(['runners-aaaaa']);
    expect(c.departures.map((d) => [d.vm.metadata.name, d.why])).toEqual([
      ['runners-aaaaa', 'scaleDown'],
      ['runners-ccccc', 'target'],
    ]);
    expect([...c.leaving].sort()).toEqual(['runners-aaaaa', 'runners-ccccc']);
    expect(c.staying.map((m) => m.metadata.name)).toEqual(['runners-bbbbb', 'runners-ddddd']);
    expect(c.dropTargets).toEqual(['runners-zzzzz']);
  });

  it('chooses the policy victims for the surplus left after recorded leavers', () => {
    const p = pool({ replicas: 1, scaleDownPolicy: 'OldestFirst' });
    const members = [
      steady(p, 'runners-aaaaa', { created: at(-3 * HOUR) }),
      steady(p, 'runners-bbbbb', { created: at(-2 * HOUR) }),
      steady(p, 'runners-ccccc', { created: at(-HOUR) }),
    ];
    const c = decideCount({ ...observe(observed(p, members)), rand: seededRandom(1) });
    expect(names(c.victims)).toEqual(['runners-aaaaa', 'runners-bbbbb']);
    expect(c.staying.map((m) => m.metadata.name)).toEqual(['runners-ccccc']);
  });
});

describe('decideCount: protection, drains and cancellation', () => {
  const guard = { [keys.protected]: 'true' };
  const targets = (...ns: string[]) => ({
    [keys.scaleDownTargets]: JSON.stringify(ns.map((n) => ({ name: n, uid: `uid-${n}` }))),
  });
  const five = (
    p: ReturnType<typeof pool>,
    protect: string[] = [],
    extra: Record<string, Record<string, string>> = {},
  ) =>
    ['a', 'b', 'c', 'd', 'e'].map((x, i) => {
      const name = `runners-${x.repeat(5)}`;
      const annotations = { ...(protect.includes(name) ? guard : {}), ...extra[name] };
      return steady(p, name, { created: at(-(5 - i) * HOUR), annotations });
    });

  it('never picks a protected member; holds the surplus only protected members could fill', () => {
    const p = pool({ replicas: 1, scaleDownPolicy: 'NewestFirst' });
    const ms = five(p, ['runners-ddddd', 'runners-eeeee', 'runners-bbbbb']);
    const c = decideCount({ ...observe(observed(p, ms)), rand: seededRandom(1) });
    expect(names(c.victims)).toEqual(['runners-ccccc', 'runners-aaaaa']);
    expect(c.protectedHeld).toBe(2);
  });

  it('a recorded victim that became protected is chosen again among the others', () => {
    const p = pool({
      replicas: 2,
      status: { intent: { deletes: [{ name: 'runners-eeeee', uid: 'uid-runners-eeeee' }] } },
    });
    const ms = five(p, ['runners-eeeee']).slice(2);
    const c = decideCount({ ...observe(observed(p, ms)), rand: seededRandom(1) });
    expect(names(c.victims)).toEqual(['runners-ddddd']);
    expect(c.staying.map((m) => m.metadata.name)).toContain('runners-eeeee');
    expect(c.protectedHeld).toBe(0);
  });

  it('a protected scaledownwith target waits, recorded, and no one is removed in its place', () => {
    const p = pool({ replicas: 4, annotations: targets('runners-ccccc') });
    const c = decideCount({
      ...observe(observed(p, five(p, ['runners-ccccc']))),
      rand: seededRandom(1),
    });
    expect(c.victims).toEqual([]);
    expect(c.departures).toEqual([]);
    expect(c.dropTargets).toEqual([]);
    expect(c.protectedHeld).toBe(1);
    expect(c.staying).toHaveLength(5);
  });

  it('a scale-up during a drain takes draining members back instead of creating', () => {
    const drainingAt = (t: string) => ({ [keys.drainRequested]: t });
    const p = pool({
      replicas: 4,
      status: {
        intent: {
          deletes: [
            { name: 'runners-ddddd', uid: 'uid-runners-ddddd' },
            { name: 'runners-eeeee', uid: 'uid-runners-eeeee' },
          ],
        },
      },
    });
    p.spec.scaleDown = { drainTimeout: '10m' };
    const ms = five(p, [], {
      'runners-ddddd': drainingAt(at(-2 * MINUTE)),
      'runners-eeeee': drainingAt(at(-MINUTE)),
    });
    const c = decideCount({ ...observe(observed(p, ms)), rand: seededRandom(1) });
    expect(c.creates).toEqual([]);
    // The latest asked comes back first; the other keeps draining.
    expect(names(c.victims)).toEqual(['runners-ddddd']);
    expect(c.staying.map((m) => m.metadata.name)).toContain('runners-eeeee');
  });

  it('creates only for the shortfall left after every drain is taken back', () => {
    const p = pool({
      replicas: 6,
      status: { intent: { deletes: [{ name: 'runners-eeeee', uid: 'uid-runners-eeeee' }] } },
    });
    p.spec.scaleDown = { drainTimeout: '10m' };
    const ms = five(p, [], { 'runners-eeeee': { [keys.drainRequested]: at(-MINUTE) } });
    const c = decideCount({ ...observe(observed(p, ms)), rand: seededRandom(1) });
    expect(c.victims).toEqual([]);
    expect(c.creates).toHaveLength(1);
  });

  it('without a drain a scale-up does not take a leaving member back (the reference behaviour)', () => {
    const p = pool({
      replicas: 5,
      status: { intent: { deletes: [{ name: 'runners-eeeee', uid: 'uid-runners-eeeee' }] } },
    });
    const c = decideCount({ ...observe(observed(p, five(p))), rand: seededRandom(1) });
    expect(names(c.victims)).toEqual(['runners-eeeee']);
    expect(c.creates).toEqual([]);
  });

  it('a scale-up takes a protected target back first (it stays, its record dropped)', () => {
    const p = pool({ replicas: 5, annotations: targets('runners-ccccc') });
    const c = decideCount({
      ...observe(observed(p, five(p, ['runners-ccccc']))),
      rand: seededRandom(1),
    });
    expect(c.dropTargets).toEqual(['runners-ccccc']);
    expect(c.protectedHeld).toBe(0);
    expect(c.creates).toEqual([]);
  });

  it('warns about a malformed deletion cost only when victims are chosen', () => {
    const bad = { 'runners-aaaaa': { [keys.deletionCost]: 'cheap' } };
    const steadyPool = pool({ replicas: 5 });
    const quiet = decideCount({
      ...observe(observed(steadyPool, five(steadyPool, [], bad))),
      rand: seededRandom(1),
    });
    expect(quiet.warnings).toEqual([]);
    const p = pool({ replicas: 4 });
    const c = decideCount({ ...observe(observed(p, five(p, [], bad))), rand: seededRandom(1) });
    expect(c.warnings).toEqual([
      'VirtualMachine runners-aaaaa: deletion cost "cheap" is not an int32; counted as 0 (annotation vmpool.virtualization.deckhouse.io/deletion-cost)',
    ]);
  });
});
