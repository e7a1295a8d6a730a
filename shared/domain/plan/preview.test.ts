import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ScaleDownPolicy, VirtualMachine } from '../../api/index.js';
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
import { plan } from './index.js';
import { previewVictims } from './preview.js';

type Member = ReturnType<typeof steady>;

/** A member with annotations and a node. */
function member(
  p: ReturnType<typeof pool>,
  name: string,
  ageMin: number,
  o: { node?: string; annotations?: Record<string, string> } = {},
): Member {
  const m = steady(p, name, { created: at(-ageMin * MINUTE), annotations: o.annotations ?? {} });
  if (o.node !== undefined) m.vm.status = { ...m.vm.status, nodeName: o.node };
  return m;
}

/** The fleet: five runners, two protected, one at cost -100, three on n1 and two on n2. */
function fleet(policy: ScaleDownPolicy = 'NewestFirst') {
  const p = pool({ replicas: 5, scaleDownPolicy: policy });
  const guard = { [keys.protected]: 'true' };
  return {
    p,
    members: [
      member(p, 'runners-a1111', 50, { node: 'n1', annotations: guard }),
      member(p, 'runners-a2222', 40, { node: 'n1', annotations: guard }),
      member(p, 'runners-a3333', 30, { node: 'n1' }),
      member(p, 'runners-b1111', 20, { node: 'n2', annotations: { [keys.deletionCost]: '-100' } }),
      member(p, 'runners-b2222', 10, { node: 'n2' }),
    ],
  };
}

describe('previewVictims', () => {
  it('lists the next victims in order with the key that chose each', () => {
    const { p, members } = fleet();
    const v = previewVictims(observed(p, members), 2);
    expect(v.victims.map((x) => [x.name, x.reason, x.protected])).toEqual([
      ['runners-b1111', 'DeletionCost', false],
      // n1 keeps three members (two protected), n2 one: n1's unprotected one goes, though older.
      ['runners-a3333', 'Spread', false],
    ]);
    expect(v.victims[0]).toMatchObject({
      deletionCost: -100,
      nodeName: 'n2',
      message: 'lowest deletion cost left (-100)',
    });
    expect(v.victims[1]?.message).toBe('node n1 hosts the most staying members (3)');
    expect(v.leaving).toEqual([]);
    expect(v.message).toBe('');
  });

  it('never lists a standby member: a scale-down takes replicas only', () => {
    const { p, members } = fleet();
    p.spec.standby = { replicas: 1, state: 'Stopped' };
    // The newest member of all, on the emptiest node: first in any ranking, were it a replica.
    const spare = member(p, 'runners-c1111', 1, { node: 'n3' });
    spare.vm.metadata.labels = { ...spare.vm.metadata.labels, [keys.standby]: 'true' };
    const v = previewVictims(observed(p, [...members, spare]), 5);
    expect(v.victims.map((x) => x.name)).not.toContain('runners-c1111');
    expect(v.victims).toHaveLength(5);
    const down = { ...p, spec: { ...p.spec, replicas: 3 } };
    const deleted = plan(observed(down, [...members, spare]), NOW, seededRandom(1)).actions.flatMap(
      (a) => (a.kind === 'deleteVm' ? [a.name] : []),
    );
    expect(deleted.sort()).toEqual(
      v.victims
        .slice(0, 2)
        .map((x) => x.name)
        .sort(),
    );
  });

  it('beyond the unprotected members, shows the protected ones a scale-down would wait for', () => {
    const { p, members } = fleet();
    const v = previewVictims(observed(p, members), 5);
    expect(v.victims.map((x) => [x.name, x.reason, x.protected])).toEqual([
      ['runners-b1111', 'DeletionCost', false],
      ['runners-a3333', 'Spread', false],
      ['runners-b2222', 'OnlyCandidate', false],
      ['runners-a2222', 'Protected', true],
      ['runners-a1111', 'Protected', true],
    ]);
    expect(previewVictims(observed(p, members), 9).message).toBe('only 5 members could leave');
  });

  it('lists members already leaving apart, with their drain', () => {
    const { members } = fleet();
    const p = pool({
      replicas: 4,
      status: { intent: { deletes: [{ name: 'runners-b2222', uid: 'uid-runners-b2222' }] } },
    });
    members[4]!.vm.metadata.annotations = { [keys.drainRequested]: at(-MINUTE) };
    const v = previewVictims(observed(p, members), 1);
    expect(v.leaving).toEqual([
      { name: 'runners-b2222', why: 'scaleDown', draining: true, drainRequested: at(-MINUTE) },
    ]);
    expect(v.victims.map((x) => x.name)).toEqual(['runners-b1111']);
  });

  it('answers nothing under Explicit, and says why', () => {
    const { p, members } = fleet('Explicit');
    const v = previewVictims(observed(p, members), 2);
    expect(v.victims).toEqual([]);
    expect(v.message).toContain('Explicit');
  });

  it('cannot disagree with the reconciler: a scale-down by n deletes exactly the first n it lists', () => {
    const arb = fc.record({
      specs: fc.array(
        fc.record({
          age: fc.integer({ min: 1, max: 8 }),
          node: fc.constantFrom(undefined, 'n1', 'n2', 'n3'),
          cost: fc.constantFrom(undefined, '-5', '0', '7', 'bad'),
          protect: fc.boolean(),
        }),
        { minLength: 1, maxLength: 8 },
      ),
      policy: fc.constantFrom<ScaleDownPolicy>('NewestFirst', 'OldestFirst'),
      n: fc.integer({ min: 1, max: 8 }),
    });
    fc.assert(
      fc.property(arb, ({ specs, policy, n }) => {
        const p = pool({ replicas: specs.length, scaleDownPolicy: policy });
        const members = specs.map((s, i) =>
          member(p, `runners-m${i}xxx`, s.age, {
            ...(s.node === undefined ? {} : { node: s.node }),
            annotations: {
              ...(s.cost === undefined ? {} : { [keys.deletionCost]: s.cost }),
              ...(s.protect ? { [keys.protected]: 'true' } : {}),
            },
          }),
        );
        const preview = previewVictims(observed(p, members), n);
        const down = { ...p, spec: { ...p.spec, replicas: Math.max(0, specs.length - n) } };
        const pl = plan(observed(down, members), NOW, seededRandom(1));
        const deleted = pl.actions.flatMap((a) => (a.kind === 'deleteVm' ? [a.name] : []));
        const expected = preview.victims.filter((x) => !x.protected).map((x) => x.name);
        expect(deleted).toEqual(expected);
        const held = preview.victims.filter((x) => x.protected).length;
        expect(pl.status.heldReplicas).toBe(held);
        const byName = new Map<string, VirtualMachine>(
          members.map((m) => [m.vm.metadata.name!, m.vm]),
        );
        for (const d of deleted)
          expect(byName.get(d)?.metadata.annotations?.[keys.protected]).not.toBe('true');
      }),
    );
  });
});
