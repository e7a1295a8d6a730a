import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { plan } from './index.js';
import {
  HOUR,
  NOW,
  at,
  observed as observe,
  pool,
  steady,
  actionsOf as of,
  rand42 as rand,
} from '../../../test/unit/builders.js';

describe('plan: scale down', () => {
  const ages = (p: VirtualMachinePool) => [
    steady(p, 'runners-old11', { created: at(-3 * HOUR) }),
    steady(p, 'runners-mid22', { created: at(-2 * HOUR) }),
    steady(p, 'runners-new33', { created: at(-1 * HOUR) }),
  ];
  it.each([
    ['NewestFirst', 1, ['runners-new33', 'runners-mid22']],
    ['OldestFirst', 1, ['runners-old11', 'runners-mid22']],
    ['NewestFirst', 2, ['runners-new33']],
    ['OldestFirst', 2, ['runners-old11']],
    ['Explicit', 1, []],
  ] as const)('%s to %i deletes %j', (policy, replicas, expected) => {
    const p = pool({ replicas, scaleDownPolicy: policy });
    const pl = plan(observe(p, ages(p)), NOW, rand());
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(expected);
    expect(of(pl, 'deleteVm').every((d) => d.uid === `uid-${d.name}`)).toBe(true);
    expect(pl.status.intent?.deletes?.map((d) => d.name) ?? []).toEqual(expected);
  });

  it('breaks creationTimestamp ties by name', () => {
    const p = pool({ replicas: 1, scaleDownPolicy: 'OldestFirst' });
    const same = at(-HOUR);
    const pl = plan(
      observe(p, [
        steady(p, 'runners-bbbbb', { created: same }),
        steady(p, 'runners-aaaaa', { created: same }),
      ]),
      NOW,
      rand(),
    );
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-aaaaa']);
  });

  it('scaling back down in the same second removes the members of the later scale-up', () => {
    const p = pool({ replicas: 2, generation: 3 });
    const same = at(-1000);
    const born = (g: number) => ({ [keys.createdGeneration]: String(g) });
    const pl = plan(
      observe(p, [
        steady(p, 'runners-aaaaa', { created: same, annotations: born(1) }),
        steady(p, 'runners-zzzzz', { created: same, annotations: born(1) }),
        steady(p, 'runners-bbbbb', { created: same, annotations: born(2) }),
        steady(p, 'runners-ccccc', { created: same, annotations: born(2) }),
      ]),
      NOW,
      rand(),
    );
    expect(
      of(pl, 'deleteVm')
        .map((d) => d.name)
        .sort(),
    ).toEqual(['runners-bbbbb', 'runners-ccccc']);
  });

  it('counts a Terminating member as already removed (desired 1 of {terminating, old, new})', () => {
    const p = pool({ replicas: 1 });
    const pl = plan(
      observe(p, [
        steady(p, 'runners-term1', { terminating: true, created: at(-5 * HOUR) }),
        steady(p, 'runners-old11', { created: at(-3 * HOUR) }),
        steady(p, 'runners-new33', { created: at(-1 * HOUR) }),
      ]),
      NOW,
      rand(),
    );
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-new33']);
  });

  it('re-issues a recorded victim and picks no other (a duplicate event deletes nothing more)', () => {
    const p = pool({
      replicas: 2,
      status: { intent: { deletes: [{ name: 'runners-old11', uid: 'uid-runners-old11' }] } },
    });
    const pl = plan(observe(p, ages(p)), NOW, rand());
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-old11']);
  });

  it('forgets a recorded victim once it is Terminating or gone', () => {
    const p = pool({
      replicas: 2,
      status: { intent: { deletes: [{ name: 'runners-new33', uid: 'uid-runners-new33' }] } },
    });
    const members = ages(p);
    members[2] = steady(p, 'runners-new33', { terminating: true });
    const pl = plan(observe(p, members), NOW, rand());
    expect(of(pl, 'deleteVm')).toEqual([]);
    expect(pl.status.intent).toBeUndefined();
  });

  it('does not delete a same-named newcomer recorded under another uid', () => {
    const p = pool({
      replicas: 3,
      status: { intent: { deletes: [{ name: 'runners-new33', uid: 'old-uid' }] } },
    });
    const pl = plan(observe(p, ages(p)), NOW, rand());
    expect(of(pl, 'deleteVm')).toEqual([]);
  });

  it('never deletes anonymously under Explicit, even far above desired', () => {
    const p = pool({ replicas: 0, scaleDownPolicy: 'Explicit' });
    const pl = plan(observe(p, ages(p)), NOW, rand());
    expect(of(pl, 'deleteVm')).toEqual([]);
    expect(pl.status.conditions?.find((c) => c.type === 'Progressing')?.status).toBe('True');
  });
});

describe('plan: scaledownwith targets', () => {
  const targets = (...t: string[]) => ({
    [keys.scaleDownTargets]: JSON.stringify(t.map((name) => ({ name, uid: `uid-${name}` }))),
  });

  it.each(['NewestFirst', 'OldestFirst', 'Explicit'] as const)(
    '%s: deletes exactly the targets first',
    (policy) => {
      const p = pool({
        replicas: 1,
        scaleDownPolicy: policy,
        annotations: targets('runners-aaaaa'),
      });
      const pl = plan(
        observe(p, [
          steady(p, 'runners-aaaaa', { created: at(-5 * HOUR) }),
          steady(p, 'runners-bbbbb'),
        ]),
        NOW,
        rand(),
      );
      expect(of(pl, 'deleteVm')).toEqual([
        { kind: 'deleteVm', name: 'runners-aaaaa', uid: 'uid-runners-aaaaa', why: 'target' },
      ]);
    },
  );

  it('drops targets from the pool once they are Terminating or gone', () => {
    const p = pool({ replicas: 1, annotations: targets('runners-aaaaa', 'runners-ccccc') });
    const pl = plan(
      observe(p, [steady(p, 'runners-aaaaa', { terminating: true }), steady(p, 'runners-bbbbb')]),
      NOW,
      rand(),
    );
    expect(of(pl, 'deleteVm')).toEqual([]);
    expect(of(pl, 'dropTargets')).toEqual([
      { kind: 'dropTargets', names: ['runners-aaaaa', 'runners-ccccc'] },
    ]);
  });

  it('a scale-up racing a scaledownwith deletes only the target and creates the rest', () => {
    const p = pool({ replicas: 4, annotations: targets('runners-aaaaa') });
    const pl = plan(
      observe(p, [steady(p, 'runners-aaaaa'), steady(p, 'runners-bbbbb')]),
      NOW,
      rand(),
    );
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-aaaaa']);
    expect(of(pl, 'createVm')).toHaveLength(2);
  });
});
