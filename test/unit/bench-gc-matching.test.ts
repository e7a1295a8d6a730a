/**
 * The GC benchmark's matching replay: a pass's selector with every uid altered matches none of the
 * uids it named, keeps its length (the API server compares as many bytes) and leaves the key alone.
 */
import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import { unmatched } from '../../bench/gc.js';

const uids = [
  '0f8c2a1e-5b7d-4c3a-9e21-7a6b5c4d3e2f',
  'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d',
  'ffffffff-ffff-4fff-bfff-ffffffffffff',
];

describe('unmatched', () => {
  it('alters every uid of an in-selector, and only them', () => {
    const sel = `${keys.poolUid} in (${uids.join(',')})`;
    const out = unmatched(sel);
    expect(out).toHaveLength(sel.length);
    expect(out.startsWith(`${keys.poolUid} in (`)).toBe(true);
    for (const u of uids) {
      expect(out).not.toContain(u);
      expect(out).toContain(`x${u.slice(1)}`);
    }
  });

  it('leaves a selector without uids as it was', () => {
    expect(unmatched(keys.poolUid)).toBe(keys.poolUid);
  });
});
