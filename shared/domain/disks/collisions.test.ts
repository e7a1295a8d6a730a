import { describe, expect, it } from 'vitest';
import { BLOCK_DEVICES_READY } from '../../api/index.js';
import { pool, vm } from '../../../test/unit/builders.js';
import { collisionLosers } from './collisions.js';
import type { RefSlot } from './disks.js';

const p = pool();
const slot = (disk: string, placeholder = false): RefSlot => ({ index: 1, disk, placeholder });
const slots = (...s: RefSlot[]) => new Map(s.map((x) => [x.disk, x]));

describe('collisionLosers', () => {
  it('hands a disk two members reference to the one whose block devices are ready', () => {
    const ready = vm(p, 'runners-zzzzz', {
      conditions: [{ type: BLOCK_DEVICES_READY, status: 'True' }],
    });
    const other = vm(p, 'runners-aaaaa');
    const losers = collisionLosers([other, ready], [slots(slot('d1')), slots(slot('d1'))]);
    expect(losers).toEqual(new Map([['runners-aaaaa', new Set(['d1'])]]));
  });

  it('breaks a tie by name, collects every disk a member loses, and ignores placeholders', () => {
    const a = vm(p, 'runners-aaaaa');
    const b = vm(p, 'runners-bbbbb');
    const c = vm(p, 'runners-ccccc');
    const losers = collisionLosers(
      [c, b, a],
      [
        slots(slot('d1'), slot('d2')),
        slots(slot('d1'), slot('cache', true)),
        slots(slot('d2'), slot('cache', true)),
      ],
    );
    // d1: b before c; d2: a before c. c loses both, b and a keep theirs.
    expect(losers).toEqual(new Map([['runners-ccccc', new Set(['d1', 'd2'])]]));
  });

  it('finds nothing when every disk has one holder', () => {
    const a = vm(p, 'runners-aaaaa');
    const b = vm(p, 'runners-bbbbb');
    expect(collisionLosers([a, b], [slots(slot('d1')), slots(slot('d2'))]).size).toBe(0);
  });
});
