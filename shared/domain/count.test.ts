import { describe, expect, it } from 'vitest';
import { keys } from '../api/index.js';
import { decideCount } from './count.js';
import { observe } from './observe.js';
import { at, HOUR, observed, pool, seededRandom, steady } from '../../test/unit/builders.js';

const names = (xs: readonly { name: string }[]) => xs.map((x) => x.name);

describe('decideCount', () => {
  it('creates recorded pending names first, then fresh ones for the rest of the deficit', () => {
    const p = pool({ replicas: 3, status: { intent: { creates: ['runners-ppppp'] } } });
    const c = decideCount(observe(observed(p, [steady(p, 'runners-aaaaa')])), seededRandom(1));
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
    const c = decideCount(observe(observed(p, members)), seededRandom(1));
    expect(names(c.victims)).toEqual(['runners-aaaaa']);
    expect(c.deletes.map((d) => [d.name, d.why])).toEqual([
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
    const c = decideCount(observe(observed(p, members)), seededRandom(1));
    expect(names(c.victims)).toEqual(['runners-aaaaa', 'runners-bbbbb']);
    expect(c.staying.map((m) => m.metadata.name)).toEqual(['runners-ccccc']);
  });
});
