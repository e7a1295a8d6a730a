import { describe, expect, it } from 'vitest';
import { normalizeIntent } from './intent.js';

describe('normalizeIntent', () => {
  it('drops empty lists and is undefined when nothing is pending', () => {
    expect(normalizeIntent({ creates: [], deletes: [], claims: [] })).toBeUndefined();
    const claims = [{ claim: 'c', claimUid: 'u', vm: 'v', vmUid: 'w' }];
    expect(normalizeIntent({ creates: [], claims })).toEqual({ claims });
  });

  it('keeps standby creates only among the creates', () => {
    expect(normalizeIntent({ creates: ['a', 'b'], standbyCreates: ['b', 'gone'] })).toEqual({
      creates: ['a', 'b'],
      standbyCreates: ['b'],
    });
    expect(normalizeIntent({ standbyCreates: ['b'] })).toBeUndefined();
  });
});
