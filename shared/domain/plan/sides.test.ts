import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../api/index.js';
import { pool, vm } from '../../../test/unit/builders.js';
import type { Departure } from './count.js';
import type { View } from './observe.js';
import type { Split } from './partition.js';
import { afterCount, replacedBySide } from './sides.js';

const p = pool();
const [r1, r2, s1, s2, s3] = ['r1', 'r2', 's1', 's2', 's3'].map((n) => vm(p, `runners-${n}`));
const ref = (m: VirtualMachine) => ({ name: m.metadata.name ?? '', uid: m.metadata.uid ?? '' });
const split = {
  active: { live: new Map([[r1!.metadata.name ?? '', r1!]]) } as unknown as View,
  standby: [s1!, s2!, s3!],
  standbyLive: [s1!, s2!, s3!],
  standbyCreates: ['runners-s4'],
  standbyDeletes: [ref(s3!)],
  standbyReplacements: [],
} satisfies Split;

describe('afterCount', () => {
  it('keeps the standby members neither promoted nor leaving, counts both sides’ creates', () => {
    const count = { promotions: [ref(s1!)], staying: [r1!, s1!], creates: ['runners-new1'] };
    const sides = afterCount({ split, count, taken: new Set(['runners-old']) });
    expect([...sides.promoted]).toEqual(['runners-s1']);
    expect(sides.staying).toEqual([r1, s1, s2]);
    expect(sides.creates).toBe(2);
    for (const n of ['runners-old', 'runners-new1']) expect(sides.taken.has(n)).toBe(true);
    expect(sides.taken.has('runners-new2')).toBe(false);
  });

  it('hands the same taken set on when the count creates nothing', () => {
    const taken = new Set(['runners-old']);
    const sides = afterCount({ split, count: { promotions: [], staying: [], creates: [] }, taken });
    expect(sides.taken).toBe(taken);
    expect(sides.staying).toEqual([s1, s2]);
  });
});

describe('replacedBySide', () => {
  it('a replica or a member promoted now leaves as a replica, the rest from the standby', () => {
    const d = (m: VirtualMachine): Departure => ({
      vm: m,
      uid: m.metadata.uid ?? '',
      why: 'unhealthy',
    });
    const out = replacedBySide({
      split,
      promoted: new Set(['runners-s1']),
      victims: [d(r1!), d(s1!), d(s2!), d(r2!)],
    });
    expect(out.replicas.map((x) => x.vm)).toEqual([r1, s1]);
    expect(out.standby.map((x) => x.vm)).toEqual([s2, r2]);
  });
});
