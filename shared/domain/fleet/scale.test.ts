import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ScaleDownPolicy, VirtualMachine } from '../../api/index.js';
import {
  at,
  MINUTE,
  pool,
  seededRandom,
  vm,
  scaleInput as input,
  oldVm as old,
  midVm as mid,
  youngVm as young,
} from '../../../test/unit/builders.js';
import { decideScale } from './scale.js';
import { nameOf } from './membership.js';
import type { Ranked } from './victims.js';
import { rankVictims } from './victims.js';

const vn = (r: Ranked): string => nameOf(r.vm);
const NOTHING = { creates: [], dropped: [], victims: [], cancelled: [], promoted: [], blocked: 0 };

const p = pool();

const three = [mid, young, old];

describe('decideScale', () => {
  it('creates the missing replicas with fresh names <pool>-<5 chars>', () => {
    const d = decideScale(input({ desired: 5, members: [old] }), seededRandom(1));
    expect(d.victims).toEqual([]);
    expect(d.creates).toHaveLength(4);
    expect(new Set(d.creates).size).toBe(4);
    for (const n of d.creates) {
      expect(n).toMatch(/^runners-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      expect(n).toHaveLength('runners'.length + 6);
    }
  });

  it('is deterministic for a seed', () => {
    const a = decideScale(input({ desired: 3 }), seededRandom(9)).creates;
    expect(decideScale(input({ desired: 3 }), seededRandom(9)).creates).toEqual(a);
  });

  it('avoids taken names', () => {
    const first = decideScale(input({ desired: 1 }), seededRandom(4)).creates[0]!;
    const d = decideScale(input({ desired: 1, taken: new Set([first]) }), seededRandom(4));
    expect(d.creates).toHaveLength(1);
    expect(d.creates[0]).not.toBe(first);
  });

  it('counts pending creates: no second batch while creates are unobserved', () => {
    expect(
      decideScale(
        input({ desired: 3, members: [old], pendingCreates: ['runners-p1111', 'runners-p2222'] }),
        seededRandom(1),
      ),
    ).toEqual(NOTHING);
    expect(
      decideScale(
        input({ desired: 4, members: [old], pendingCreates: ['runners-p1111'] }),
        seededRandom(1),
      ).creates,
    ).toHaveLength(2);
  });

  it('does nothing when the count equals desired', () => {
    expect(decideScale(input({ members: three }), seededRandom(1))).toEqual(NOTHING);
  });

  it('counts Terminating members: no replacement until they are gone', () => {
    const dying = vm(p, 'runners-dddd1', { terminating: true });
    expect(decideScale(input({ members: [old, mid, dying] }), seededRandom(1))).toEqual(NOTHING);
  });

  it.each<[ScaleDownPolicy, number, string[]]>([
    ['NewestFirst', 2, ['runners-yng11']],
    ['NewestFirst', 1, ['runners-yng11', 'runners-mid11']],
    ['OldestFirst', 2, ['runners-old11']],
    ['OldestFirst', 1, ['runners-old11', 'runners-mid11']],
    ['OldestFirst', 0, ['runners-old11', 'runners-mid11', 'runners-yng11']],
    ['Explicit', 1, []],
    ['Explicit', 0, []],
  ])('%s to %d picks %j', (policy, desired, want) => {
    const d = decideScale(input({ policy, desired, members: three }), seededRandom(1));
    expect(d.victims.map(vn)).toEqual(want);
    expect(d.creates).toEqual([]);
  });

  it('breaks creationTimestamp ties by name (deterministic, unlike the reference)', () => {
    const t = at(-MINUTE);
    const tied = ['runners-ccccc', 'runners-bbbbb', 'runners-ddddd'].map((n) =>
      vm(p, n, { created: t }),
    );
    expect(
      decideScale(
        input({ desired: 2, members: tied, policy: 'OldestFirst' }),
        seededRandom(1),
      ).victims.map(vn),
    ).toEqual(['runners-bbbbb']);
    expect(
      decideScale(
        input({ desired: 2, members: tied, policy: 'NewestFirst' }),
        seededRandom(1),
      ).victims.map(vn),
    ).toEqual(['runners-ddddd']);
  });

  it('reference case: desired 1, members {terminating, old, new} → only new deleted', () => {
    const dying = vm(p, 'runners-dddd1', { terminating: true, created: at(-5 * MINUTE) });
    const d = decideScale(input({ desired: 1, members: [dying, old, young] }), seededRandom(1));
    expect(d.victims.map(vn)).toEqual(['runners-yng11']);
  });

  it('members already leaving reduce the victims and are not picked again', () => {
    const leaving = new Set(['runners-old11']);
    const d = decideScale(
      input({ desired: 2, members: three, leaving, policy: 'OldestFirst' }),
      seededRandom(1),
    );
    expect(d.victims).toEqual([]);
    const d2 = decideScale(
      input({ desired: 1, members: three, leaving, policy: 'OldestFirst' }),
      seededRandom(1),
    );
    expect(d2.victims.map(vn)).toEqual(['runners-mid11']);
  });

  it('a leaving name that is also Terminating is counted once', () => {
    const dying = vm(p, 'runners-dddd1', { terminating: true });
    const d = decideScale(
      input({ desired: 2, members: [old, mid, dying], leaving: new Set(['runners-dddd1']) }),
      seededRandom(1),
    );
    expect(d.victims).toEqual([]);
  });

  it('rankVictims without costs or nodes is the age order', () => {
    expect(rankVictims(three, 'OldestFirst', three).map(vn)).toEqual([
      'runners-old11',
      'runners-mid11',
      'runners-yng11',
    ]);
  });
});

describe('decideScale laws (L1, L2)', () => {
  const arb = fc.record({
    desired: fc.integer({ min: 0, max: 8 }),
    policy: fc.constantFrom<ScaleDownPolicy>('NewestFirst', 'OldestFirst', 'Explicit'),
    members: fc.array(
      fc.record({
        ageMin: fc.integer({ min: 0, max: 5 }),
        terminating: fc.boolean(),
        leaving: fc.boolean(),
      }),
      { maxLength: 10 },
    ),
    pending: fc.integer({ min: 0, max: 3 }),
    seed: fc.integer(),
  });

  it('never creates more than desired − count, never picks outside the candidates, never more victims than the surplus', () => {
    fc.assert(
      fc.property(arb, (s) => {
        const members: VirtualMachine[] = s.members.map((m, i) =>
          vm(p, `runners-m${String(i).padStart(4, '0')}`, {
            created: at(-m.ageMin * MINUTE),
            terminating: m.terminating,
          }),
        );
        const leaving = new Set(members.filter((_, i) => s.members[i]!.leaving).map(nameOf));
        const pendingCreates = Array.from({ length: s.pending }, (_, i) => `runners-p${i}xxx`);
        const count = members.length + pendingCreates.length;
        const d = decideScale(
          input({
            desired: s.desired,
            policy: s.policy,
            members,
            pendingCreates,
            leaving,
            taken: new Set([...members.map(nameOf), ...pendingCreates]),
          }),
          seededRandom(s.seed),
        );
        expect(d.creates.length).toBeLessThanOrEqual(Math.max(0, s.desired - count));
        expect(count + d.creates.length).toBeLessThanOrEqual(Math.max(s.desired, count));
        expect(d.creates.length > 0 && d.victims.length > 0).toBe(false);
        const candidates = new Set(
          members
            .filter((m) => m.metadata.deletionTimestamp === undefined && !leaving.has(nameOf(m)))
            .map(nameOf),
        );
        for (const v of d.victims) expect(candidates.has(vn(v))).toBe(true);
        expect(new Set(d.victims.map(vn)).size).toBe(d.victims.length);
        expect(d.victims.length).toBeLessThanOrEqual(Math.max(0, count - s.desired));
        const alreadyGoing = members.filter(
          (m) => m.metadata.deletionTimestamp !== undefined || leaving.has(nameOf(m)),
        ).length;
        expect(d.victims.length).toBeLessThanOrEqual(Math.max(0, count - s.desired - alreadyGoing));
        if (s.policy === 'Explicit') expect(d.victims).toEqual([]);
        for (const n of d.creates) expect(n).toMatch(/^runners-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
        expect(new Set([...d.creates, ...members.map(nameOf), ...pendingCreates]).size).toBe(
          d.creates.length + count,
        );
      }),
    );
  });
});

describe('decideScale with randomness that repeats', () => {
  it('still returns distinct names when every draw collides', () => {
    const d = decideScale(
      {
        pool: 'p',
        desired: 3,
        policy: 'NewestFirst',
        members: [],
        pendingCreates: [],
        leaving: new Set(),
        taken: new Set(['p-bbbbb']),
      },
      () => 0,
    );
    expect(new Set(d.creates).size).toBe(3);
    expect(d.creates).not.toContain('p-bbbbb');
  });
});
