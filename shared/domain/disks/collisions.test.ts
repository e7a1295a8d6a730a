import { describe, expect, it } from 'vitest';
import { BLOCK_DEVICES_READY } from '../../api/index.js';
import { pool, vm } from '../../../test/unit/builders.js';
import { collisionLosers } from './collisions.js';
import type { RefSlot, Slots } from './disks.js';

const p = pool();
const slot = (disk: string, placeholder = false): RefSlot => ({
  template: disk,
  index: 1,
  disk,
  placeholder,
});
const slots = (...s: RefSlot[]): Slots => s;
/** Every disk counted as shared: the prefilter lets all through. */
const all = new Set(['d1', 'd2', 'cache']);

describe('collisionLosers', () => {
  it('hands a disk two members reference to the one whose block devices are ready', () => {
    const ready = vm(p, 'runners-zzzzz', {
      conditions: [{ type: BLOCK_DEVICES_READY, status: 'True' }],
    });
    const other = vm(p, 'runners-aaaaa');
    const losers = collisionLosers([other, ready], [slots(slot('d1')), slots(slot('d1'))], all);
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
      all,
    );
    // d1: b before c; d2: a before c. c loses both, b and a keep theirs.
    expect(losers).toEqual(new Map([['runners-ccccc', new Set(['d1', 'd2'])]]));
  });

  it('finds nothing when every disk has one holder', () => {
    const a = vm(p, 'runners-aaaaa');
    const b = vm(p, 'runners-bbbbb');
    expect(collisionLosers([a, b], [slots(slot('d1')), slots(slot('d2'))], all).size).toBe(0);
  });

  it('looks only at the disks named shared: one referenced once is never in a collision', () => {
    const ready = vm(p, 'runners-zzzzz', {
      conditions: [{ type: BLOCK_DEVICES_READY, status: 'True' }],
    });
    const other = vm(p, 'runners-aaaaa');
    const both = [slots(slot('d1'), slot('d2')), slots(slot('d1'), slot('d2'))];
    expect(collisionLosers([other, ready], both, new Set(['d2']))).toEqual(
      new Map([['runners-aaaaa', new Set(['d2'])]]),
    );
    expect(collisionLosers([other, ready], both, new Set()).size).toBe(0);
  });
});
