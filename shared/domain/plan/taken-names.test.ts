import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../api/index.js';
import type { Observed } from './observe.js';
import { plan } from './index.js';
import { NOW, notMember, observed, pool, steady } from '../../../test/unit/builders.js';

/** What every draw of `() => 0` names a new member of the pool `runners`. */
const DRAWN = 'runners-bbbbb';

const createdNames = (obs: Observed): string[] =>
  plan(obs, new Date(NOW), () => 0).actions.flatMap((a) =>
    a.kind === 'createVm' ? [a.vm.metadata.name ?? ''] : [],
  );

/**
 * The names a new member may not take, attacked through the whole plan: randomness that always
 * draws the one name some VM, recorded create or foreign holder already has. A new member under it
 * would meet AlreadyExists (and be read as made), take over a Terminating member's Delete-policy
 * disks (`<name>-root`), or collapse two creates into one.
 */
describe('a new member never takes a name already held', () => {
  const p = pool({ replicas: 2 });
  const a = steady(p, 'runners-aaaaa');
  // [holder, observed, new creates expected]; a recorded create is made under its own name.
  const cases: Array<[string, Observed, number]> = [
    [
      'by a Terminating member',
      observed(pool({ replicas: 3 }), [a, steady(p, DRAWN, { terminating: true })]),
      1,
    ],
    [
      'by a VM labelled for the pool but not owned by it',
      { ...observed(p, [a]), vms: [a.vm, notMember(p, DRAWN, { labelled: true })] },
      1,
    ],
    ['by a VM outside the pool', { ...observed(p, [a]), vms: [a.vm, notMember(p, DRAWN)] }, 1],
    [
      'by a recorded create not made yet',
      observed(pool({ replicas: 3, status: { intent: { creates: [DRAWN] } } }), [a]),
      1,
    ],
    [
      'by a foreign holder the executor reported',
      { ...observed(p, [a]), foreign: new Set([DRAWN]) },
      1,
    ],
  ];
  for (const [holder, obs, creates] of cases)
    it(`held ${holder}`, () => {
      const all = createdNames(obs);
      expect(new Set(all).size).toBe(all.length);
      const recorded = obs.pool.status?.intent?.creates ?? [];
      expect(all.filter((n) => recorded.includes(n))).toEqual(recorded);
      const names = all.filter((n) => !recorded.includes(n));
      expect(names).toHaveLength(creates);
      expect(names).not.toContain(DRAWN);
      const seen = obs.vms.map((v: VirtualMachine) => v.metadata.name);
      for (const n of names) expect(seen).not.toContain(n);
    });

  it('several creates of one plan get distinct names, none of them held', () => {
    const obs = { ...observed(pool({ replicas: 5 }), [a]), vms: [a.vm, notMember(p, DRAWN)] };
    const names = createdNames(obs);
    expect(names).toHaveLength(4);
    expect(new Set(names).size).toBe(4);
    expect(names).not.toContain(DRAWN);
  });
});
