import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { canonicalJson } from '../formats/index.js';
import { plan } from './index.js';
import { CREATE_BURST } from '../fleet/index.js';
import {
  HOUR,
  MINUTE,
  NOW,
  at,
  disk,
  nested,
  observed as observe,
  pool,
  seededRandom,
  steady,
  withField,
  actionsOf as of,
  rand42 as rand,
  stored,
} from '../../../test/unit/builders.js';

describe('plan: laws as properties', () => {
  const memberArb = fc.record({
    terminating: fc.boolean(),
    stopped: fc.boolean(),
    age: fc.integer({ min: 0, max: 5 }),
  });
  const scenario = fc.record({
    members: fc.array(memberArb, { maxLength: 8 }),
    replicas: fc.integer({ min: 0, max: 10 }),
    policy: fc.constantFrom('NewestFirst', 'OldestFirst', 'Explicit' as const),
    freeDisks: fc.integer({ min: 0, max: 4 }),
    seed: fc.integer(),
  });

  it('L1/L2/L3: never more creates than the deficit, victims only among candidates, no disk bound twice', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const p = pool({ replicas: s.replicas, scaleDownPolicy: s.policy });
        const members = s.members.map((m, i) =>
          steady(p, `runners-m${i}abc`, {
            terminating: m.terminating,
            phase: m.stopped ? 'Stopped' : 'Running',
            created: at(-m.age * HOUR),
          }),
        );
        const free = Array.from({ length: s.freeDisks }, (_, i) =>
          disk(p, `runners-cache-free${i}x`, { freeSince: at(-i * MINUTE) }),
        );
        const pl = plan(observe(p, members, free), NOW, seededRandom(s.seed));
        const count = members.length;
        const creates = of(pl, 'createVm').length;
        expect(creates).toBeLessThanOrEqual(Math.max(0, s.replicas - count));
        const candidates = new Set(
          members.filter((m) => !m.vm.metadata.deletionTimestamp).map((m) => m.vm.metadata.name),
        );
        const victims = of(pl, 'deleteVm');
        for (const v of victims) expect(candidates.has(v.name)).toBe(true);
        if (s.policy === 'Explicit') expect(victims).toEqual([]);
        expect(victims.length).toBeLessThanOrEqual(Math.max(0, count - s.replicas));
        const bound = (pl.status.intent?.bindings ?? []).map((b) => b.disk);
        expect(new Set(bound).size).toBe(bound.length);
        const held = new Set(
          members
            .filter((m) => !m.vm.metadata.deletionTimestamp)
            .flatMap((m) => m.disks.map((d) => d.metadata.name)),
        );
        for (const b of bound) expect(held.has(b)).toBe(false);
        for (const d of of(pl, 'deleteDisk')) expect(held.has(d.name)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('L1: re-planning on the stored status never adds creates beyond the deficit', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer(),
        (have, want, seed) => {
          const p = pool({ replicas: want });
          const members = Array.from({ length: have }, (_, i) => steady(p, `runners-h${i}abc`));
          const first = plan(observe(p, members), NOW, seededRandom(seed));
          const second = plan(observe(stored(p, first), members), NOW, seededRandom(seed + 1));
          const names = new Set(
            [...of(first, 'createVm'), ...of(second, 'createVm')].map((c) => c.vm.metadata.name),
          );
          expect(names.size).toBe(Math.max(0, want - have));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('a mistaken scale taken back (L1 at each instant)', () => {
  /** A pool whose members have only Delete disks: no Retain disk is recorded for a create. */
  const deleteOnly = (replicas: number) => {
    const p = pool({ replicas });
    p.spec.virtualDiskTemplates = p.spec.virtualDiskTemplates.filter(
      (t) => t.reclaim?.onScaleDown !== 'Retain',
    );
    return p;
  };

  it('a scale to 100,000 records one burst; taken back to 1, the next pass drops it and creates nothing', () => {
    const p = deleteOnly(100_000);
    const m = steady(p, 'runners-aaaaa');
    const first = plan(observe(p, [m]), NOW, rand());
    expect(of(first, 'createVm')).toHaveLength(CREATE_BURST);
    expect(first.status.intent?.creates).toHaveLength(CREATE_BURST);
    const back = { ...stored(p, first), spec: { ...p.spec, replicas: 1 } };
    const next = plan(observe(back, [m]), NOW, rand());
    expect(of(next, 'createVm')).toEqual([]);
    expect(next.status.intent).toBeUndefined();
    // The burst under way landed 300 of its creates before the pass: they are the surplus now.
    const landed = first.status.intent!.creates!.slice(0, 300).map((n) => steady(p, n));
    const after = plan(observe(back, [m, ...landed]), NOW, rand());
    expect(of(after, 'createVm')).toEqual([]);
    expect(of(after, 'deleteVm')).toHaveLength(300);
  });

  it('creates with a Retain disk recorded for them are kept (L3) but never added to', () => {
    const p = pool({ replicas: 1_000 });
    const m = steady(p, 'runners-aaaaa');
    const first = plan(observe(p, [m]), NOW, rand());
    expect(first.status.intent?.bindings).toHaveLength(CREATE_BURST);
    const back = { ...stored(p, first), spec: { ...p.spec, replicas: 1 } };
    const next = plan(observe(back, [m]), NOW, rand());
    // Another reconcile may be making them: their disks stay theirs; nothing fresh is recorded.
    expect(next.status.intent?.creates).toEqual(first.status.intent?.creates);
    expect(next.status.intent?.bindings).toEqual(first.status.intent?.bindings);
  });

  it('a pool deleted while a burst is recorded does nothing more', () => {
    const p = pool({ replicas: 2_000 });
    const first = plan(observe(p, []), NOW, rand());
    const gone = { ...stored(p, first), metadata: { ...p.metadata, deletionTimestamp: at(0) } };
    expect(plan(observe(gone, []), NOW, rand()).actions).toEqual([]);
  });
});

describe('a template nested thousands of levels deep (a pass-through field has no schema bound)', () => {
  it('is planned: a member is created from it, carrying the field', () => {
    let p = withField(nested(2_000));
    let created: unknown;
    for (let pass = 0; pass < 3 && created === undefined; pass++) {
      const out = plan({ pool: p, vms: [], disks: [] }, NOW, seededRandom(1));
      created = out.actions.find((a) => a.kind === 'createVm');
      p = { ...p, status: out.status };
    }
    expect(created).toBeDefined();
    const vm = (created as { vm: { spec: { extra?: unknown } } }).vm;
    expect(canonicalJson(vm.spec.extra)).toBe(canonicalJson(nested(2_000)));
  });
});
