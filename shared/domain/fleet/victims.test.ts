import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { rankedMember as member, candidate as cand } from '../../../test/unit/builders.js';
import type { Candidate, RankingPolicy } from './victims.js';
import { compareVictims, deletionCost, isProtected, nodeOf, occupancy } from './victims.js';

describe('annotations the ranking reads', () => {
  it.each<[string | undefined, boolean]>([
    ['true', true],
    ['false', false],
    ['True', false],
    ['', false],
    [undefined, false],
  ])('protected: %j → %s', (value, want) => {
    expect(
      isProtected(member('runners-aaaaa', value === undefined ? {} : { protect: value })),
    ).toBe(want);
  });

  it.each<[string | undefined, number, boolean]>([
    [undefined, 0, false],
    ['0', 0, false],
    ['-100', -100, false],
    ['+7', 7, false],
    ['2147483647', 2147483647, false],
    ['-2147483648', -2147483648, false],
    ['2147483648', 0, true],
    ['99999999999', 0, true],
    ['1.5', 0, true],
    ['abc', 0, true],
    ['', 0, true],
    [' 5', 0, true],
  ])('deletion cost %j → %d (malformed: %s)', (text, value, malformed) => {
    const c = deletionCost(member('runners-aaaaa', text === undefined ? {} : { cost: text }));
    expect(c.value).toBe(value);
    expect(c.malformed !== undefined).toBe(malformed);
  });

  it('reads the node from status.nodeName; an empty one is no node', () => {
    expect(nodeOf(member('runners-aaaaa', { node: 'n1' }))).toBe('n1');
    expect(nodeOf(member('runners-aaaaa', { node: '' }))).toBeUndefined();
    expect(nodeOf(member('runners-aaaaa'))).toBeUndefined();
    const load = occupancy([member('a', { node: 'n1' }), member('b', { node: 'n1' }), member('c')]);
    expect([...load]).toEqual([['n1', 2]]);
  });
});

describe('compareVictims, pairwise: the first differing key decides', () => {
  const young = member('runners-yyyyy', { ageMin: 1 });
  const old = member('runners-ooooo', { ageMin: 30 });
  const b = member('runners-bbbbb', { ageMin: 5 });
  const c = member('runners-ccccc', { ageMin: 5 });
  const genLow = member('runners-zzzzz', { ageMin: 5, gen: 1 });
  const genHigh = member('runners-aaaab', { ageMin: 5, gen: 2 });
  it.each<[string, Candidate, Candidate, RankingPolicy]>([
    ['lower cost first, whatever the age', cand(old, -1, 1), cand(young, 0, 1), 'NewestFirst'],
    ['lower cost first, whatever the node', cand(old, 0, 1), cand(young, 5, 9), 'OldestFirst'],
    ['no node before any node', cand(old, 0, Infinity), cand(young, 0, 9), 'NewestFirst'],
    ['the fuller node first', cand(old, 0, 3), cand(young, 0, 2), 'NewestFirst'],
    ['NewestFirst: newer first', cand(young, 0, 2), cand(old, 0, 2), 'NewestFirst'],
    ['OldestFirst: older first', cand(old, 0, 2), cand(young, 0, 2), 'OldestFirst'],
    [
      'same second: later generation first (Newest)',
      cand(genHigh, 0, 1),
      cand(genLow, 0, 1),
      'NewestFirst',
    ],
    [
      'same second: earlier generation first (Oldest)',
      cand(genLow, 0, 1),
      cand(genHigh, 0, 1),
      'OldestFirst',
    ],
    ['same age: name order (Oldest)', cand(b, 0, 1), cand(c, 0, 1), 'OldestFirst'],
    ['same age: reverse name order (Newest)', cand(c, 0, 1), cand(b, 0, 1), 'NewestFirst'],
  ])('%s', (_what, first, second, policy) => {
    expect(compareVictims(first, second, policy)).toBeLessThan(0);
    expect(compareVictims(second, first, policy)).toBeGreaterThan(0);
  });

  it('is 0 only for the same member and keys', () => {
    expect(compareVictims(cand(b, 0, 1), cand(b, 0, 1), 'NewestFirst')).toBe(0);
  });

  it('is a total order: antisymmetric and transitive over random candidates', () => {
    const arb = fc.record({
      cost: fc.integer({ min: -2, max: 2 }),
      crowd: fc.constantFrom(1, 2, 3, Infinity),
      age: fc.integer({ min: 0, max: 3 }),
      gen: fc.integer({ min: 0, max: 2 }),
      name: fc.constantFrom('a', 'b', 'c'),
    });
    const build = (x: { cost: number; crowd: number; age: number; gen: number; name: string }) =>
      cand(member(`runners-${x.name}`, { ageMin: x.age, gen: x.gen }), x.cost, x.crowd);
    fc.assert(
      fc.property(
        arb,
        arb,
        arb,
        fc.constantFrom<RankingPolicy>('NewestFirst', 'OldestFirst'),
        (x, y, z, pol) => {
          const [a, b2, c2] = [build(x), build(y), build(z)];
          // Antisymmetric: the signs cancel (both 0 only for equal keys).
          expect(
            Math.sign(compareVictims(a, b2, pol)) + Math.sign(compareVictims(b2, a, pol)),
          ).toBe(0);
          if (compareVictims(a, b2, pol) < 0 && compareVictims(b2, c2, pol) < 0)
            expect(compareVictims(a, c2, pol)).toBeLessThan(0);
        },
      ),
    );
  });
});
