import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { observed, pool, steady } from '../../../test/unit/builders.js';
import { observe } from './observe.js';
import { splitStandby } from './partition.js';

const names = (xs: readonly { metadata: { name?: string | undefined } }[]) =>
  xs.map((x) => x.metadata.name);

describe('splitStandby', () => {
  it('without standby members the replicas view is the whole view, pending creates aside', () => {
    const p = pool({ replicas: 2, status: { intent: { creates: ['runners-new01'] } } });
    const view = observe(observed(p, [steady(p, 'runners-aaaaa'), steady(p, 'runners-bbbbb')]));
    const split = splitStandby(view);
    expect(split.active.members).toBe(view.members);
    expect(split.active.pendingCreates).toEqual(['runners-new01']);
    expect(split.standby).toEqual([]);
    expect(split.standbyCreates).toEqual([]);
  });

  it('tells the standby by label, after the recorded promotions and returns', () => {
    const standby = { labels: { [keys.standby]: 'true' } };
    const p = pool({
      replicas: 2,
      status: {
        intent: {
          creates: ['runners-new01', 'runners-sby01'],
          standbyCreates: ['runners-sby01'],
          promotions: [{ name: 'runners-prom1', uid: 'uid-runners-prom1' }],
          returns: [{ name: 'runners-back1', uid: 'uid-runners-back1' }],
        },
      },
    });
    p.spec.standby = { replicas: 2, state: 'Stopped' };
    const view = observe(
      observed(p, [
        steady(p, 'runners-aaaaa'),
        steady(p, 'runners-sbyaa', standby),
        steady(p, 'runners-prom1', standby),
        steady(p, 'runners-back1'),
      ]),
    );
    const split = splitStandby(view);
    expect(names(split.active.members)).toEqual(['runners-aaaaa', 'runners-prom1']);
    expect([...split.active.live.keys()]).toEqual(['runners-aaaaa', 'runners-prom1']);
    expect(names(split.standby)).toEqual(['runners-sbyaa', 'runners-back1']);
    expect(names(split.standbyLive)).toEqual(['runners-sbyaa', 'runners-back1']);
    expect(split.active.pendingCreates).toEqual(['runners-new01']);
    expect(split.standbyCreates).toEqual(['runners-sby01']);
    // What the split does not read passes through untouched.
    expect(split.active.pool).toBe(view.pool);
    expect(split.active.hash).toBe(view.hash);
  });
});
