import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  rankedMember as member,
  candidate as cand,
  fleetOf,
  rankedNames as names,
} from '../../../test/unit/builders.js';
import { nameOf } from './membership.js';
import type { Candidate, RankingPolicy } from './victims.js';
import {
  compareVictims,
  deletionCost,
  isProtected,
  nodeOf,
  occupancy,
  rankVictims,
} from './victims.js';

describe('rankVictims', () => {
  it('without costs or nodes is the policy age order (today’s behaviour)', () => {
    const ms = [
      member('runners-mmmmm', { ageMin: 20 }),
      member('runners-yyyyy', { ageMin: 10 }),
      member('runners-ooooo', { ageMin: 30 }),
    ];
    expect(names(rankVictims(ms, 'NewestFirst', ms))).toEqual([
      'runners-yyyyy',
      'runners-mmmmm',
      'runners-ooooo',
    ]);
    expect(names(rankVictims(ms, 'OldestFirst', ms))).toEqual([
      'runners-ooooo',
      'runners-mmmmm',
      'runners-yyyyy',
    ]);
  });

  it('cost, then spread (no node first, fullest node next), then age; each victim says why', () => {
    // n1 hosts three (one protected, not a candidate but counted), n2 one; one member has no node.
    const a1 = member('runners-a1111', { node: 'n1', ageMin: 10 });
    const a2 = member('runners-a2222', { node: 'n1', ageMin: 20 });
    const guard = member('runners-a3333', { node: 'n1', ageMin: 5, protect: 'true' });
    const b1 = member('runners-b1111', { node: 'n2', ageMin: 1 });
    const cheap = member('runners-c1111', { node: 'n2', ageMin: 40, cost: '-100' });
    const pending = member('runners-p1111', { ageMin: 50 });
    const staying = [a1, a2, guard, b1, cheap, pending];
    const ranked = rankVictims([a1, a2, b1, cheap, pending], 'NewestFirst', staying);
    expect(ranked.map((r) => [nameOf(r.vm), r.reason])).toEqual([
      ['runners-c1111', 'DeletionCost'],
      ['runners-p1111', 'Spread'],
      // n1 has 3 staying (protected one included), n2 has 1 left; a1 and a2 tie there: age.
      ['runners-a1111', 'Age'],
      // n1 now has 2, n2 1: n1 again.
      ['runners-a2222', 'Spread'],
      ['runners-b1111', 'OnlyCandidate'],
    ]);
    expect(ranked[2]?.crowd).toBe(3);
  });

  it('counts spread again after each pick, so n at once equals n scale-downs by one', () => {
    const nodes = ['n1', 'n2', 'n3', undefined] as const;
    const arb = fc.array(
      fc.record({
        age: fc.integer({ min: 0, max: 6 }),
        cost: fc.constantFrom(undefined, '-1', '0', '3', 'x'),
        node: fc.constantFrom(...nodes),
        protect: fc.boolean(),
      }),
      { minLength: 1, maxLength: 9 },
    );
    fc.assert(
      fc.property(
        arb,
        fc.constantFrom<RankingPolicy>('NewestFirst', 'OldestFirst'),
        fc.nat(9),
        (specs, policy, n) => {
          const staying = fleetOf(specs);
          const candidates = staying.filter((m) => !isProtected(m));
          const once = names(rankVictims(candidates, policy, staying, n));
          let left = [...staying];
          const stepwise: string[] = [];
          for (let i = 0; i < n; i++) {
            const [next] = rankVictims(
              left.filter((m) => !isProtected(m)),
              policy,
              left,
              1,
            );
            if (next === undefined) break;
            stepwise.push(nameOf(next.vm));
            left = left.filter((m) => m !== next.vm);
          }
          expect(once).toEqual(stepwise);
          expect(once.length).toBe(Math.min(n, candidates.length));
          for (const v of once)
            expect(isProtected(staying.find((m) => nameOf(m) === v)!)).toBe(false);
        },
      ),
    );
  });

  /**
   * The ranking by its definition: before each pick every remaining candidate is scored with the
   * spread as it stands, the best goes, the second best says why.
   */
  function rescanEveryPick(
    candidates: readonly VirtualMachine[],
    policy: RankingPolicy,
    staying: readonly VirtualMachine[],
    n: number,
  ): Array<{ name: string; cost: number; crowd: number; reason: string }> {
    const onNode = occupancy(staying);
    const crowdOf = (m: VirtualMachine): number => {
      const node = nodeOf(m);
      return node === undefined ? Infinity : (onNode.get(node) ?? 0);
    };
    let left = [...candidates];
    const out: Array<{ name: string; cost: number; crowd: number; reason: string }> = [];
    while (out.length < n && left.length > 0) {
      const ranked = left
        .map((m) => cand(m, deletionCost(m).value, crowdOf(m)))
        .sort((a, b) => compareVictims(a, b, policy));
      const [chosen, runnerUp] = ranked as [Candidate, Candidate | undefined];
      const why = (): string => {
        if (runnerUp === undefined) return 'OnlyCandidate';
        if (chosen.cost !== runnerUp.cost) return 'DeletionCost';
        if (chosen.crowd !== runnerUp.crowd) return 'Spread';
        const sameAge =
          chosen.vm.metadata.creationTimestamp === runnerUp.vm.metadata.creationTimestamp &&
          chosen.vm.metadata.annotations?.[keys.createdGeneration] ===
            runnerUp.vm.metadata.annotations?.[keys.createdGeneration];
        return sameAge ? 'Name' : 'Age';
      };
      out.push({ name: nameOf(chosen.vm), cost: chosen.cost, crowd: chosen.crowd, reason: why() });
      const node = nodeOf(chosen.vm);
      if (node !== undefined) onNode.set(node, (onNode.get(node) ?? 1) - 1);
      left = left.filter((m) => m !== chosen.vm);
    }
    return out;
  }

  it('picks, keys and reasons equal a rescan of every candidate before each pick', () => {
    const arb = fc.array(
      fc.record({
        age: fc.integer({ min: 0, max: 4 }),
        gen: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
        cost: fc.constantFrom(undefined, '-1', '0', '3', 'x'),
        node: fc.constantFrom('n1', 'n2', 'n3', 'n4', '', undefined),
        protect: fc.boolean(),
      }),
      { minLength: 1, maxLength: 14 },
    );
    fc.assert(
      fc.property(
        arb,
        fc.constantFrom<RankingPolicy>('NewestFirst', 'OldestFirst'),
        fc.nat(16),
        (specs, policy, n) => {
          const staying = fleetOf(specs);
          const candidates = staying.filter((m) => !isProtected(m));
          const got = rankVictims(candidates, policy, staying, n).map((r) => ({
            name: nameOf(r.vm),
            cost: r.cost,
            crowd: r.crowd,
            reason: r.reason,
          }));
          expect(got).toEqual(rescanEveryPick(candidates, policy, staying, n));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('ranks 2,000 members on 50 nodes down to none in one linear pass per pick of the fronts', () => {
    const staying = Array.from({ length: 2000 }, (_, i) =>
      member(`runners-m${String(i).padStart(4, '0')}x`, {
        ageMin: i % 7,
        node: `n${i % 50}`,
        ...(i % 3 === 0 ? { cost: String(i % 5) } : {}),
      }),
    );
    const ranked = rankVictims(staying, 'NewestFirst', staying);
    expect(new Set(names(ranked)).size).toBe(2000);
    expect(ranked.slice(0, 50).every((r) => r.cost === 0)).toBe(true);
  });
});
