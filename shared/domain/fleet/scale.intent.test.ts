import { describe, expect, it } from 'vitest';
import {
  seededRandom,
  scaleInput as input,
  oldVm as old,
  midVm as mid,
} from '../../../test/unit/builders.js';
import { CREATE_BURST, decideScale } from './scale.js';

describe('decideScale: intent never outlives the desire that made it', () => {
  const pending = (n: number) =>
    Array.from({ length: n }, (_, i) => `runners-p${String(i).padStart(4, '0')}`);

  it('records at most CREATE_BURST creates, pending ones included', () => {
    const big = decideScale(input({ desired: 100_000, members: [old] }), seededRandom(1));
    expect(big.creates).toHaveLength(CREATE_BURST);
    const more = decideScale(
      input({ desired: 100_000, members: [old], pendingCreates: pending(200) }),
      seededRandom(1),
    );
    expect(more.creates).toHaveLength(CREATE_BURST - 200);
    expect(
      decideScale(
        input({ desired: 100_000, members: [old], pendingCreates: pending(CREATE_BURST) }),
        seededRandom(1),
      ).creates,
    ).toEqual([]);
  });

  it('drops pending creates beyond the desire (the latest first) before choosing any victim', () => {
    const d = decideScale(
      input({ desired: 3, members: [old, mid], pendingCreates: pending(5) }),
      seededRandom(1),
    );
    expect(d.dropped).toEqual(pending(5).slice(1));
    expect(d.creates).toEqual([]);
    expect(d.victims).toEqual([]);
    // Taken back below the members: every pending create goes, then the surplus member.
    const down = decideScale(
      input({ desired: 1, members: [old, mid], pendingCreates: pending(3) }),
      seededRandom(1),
    );
    expect(down.dropped).toEqual(pending(3));
    expect(down.victims.map((v) => v.vm.metadata.name)).toEqual([mid.metadata.name]);
  });

  it('drops pending creates of an Explicit pool too: not made yet, nobody is deleted', () => {
    const d = decideScale(
      input({ desired: 1, policy: 'Explicit', members: [old], pendingCreates: pending(4) }),
      seededRandom(1),
    );
    expect(d).toMatchObject({ dropped: pending(4), creates: [], victims: [] });
  });
});

describe('decideScale: which pending creates may go', () => {
  const pending = (n: number) =>
    Array.from({ length: n }, (_, i) => `runners-q${String(i).padStart(4, '0')}`);

  it('never drops a create with a disk recorded for it: another reconcile may be making it now', () => {
    const names = pending(4);
    const d = decideScale(
      input({ desired: 1, members: [old], pendingCreates: names, bound: new Set([names[3]!]) }),
      seededRandom(1),
    );
    expect(d.dropped).toEqual(names.slice(0, 3));
  });

  it('drops an intent recorded beyond one burst down to the burst (the latest first)', () => {
    const names = pending(30);
    const d = decideScale(
      input({ desired: 100, members: [old], pendingCreates: names, burst: 10 }),
      seededRandom(1),
    );
    expect(d.dropped).toEqual(names.slice(10));
    expect(d.creates).toEqual([]);
  });
});
