import { describe, expect, it } from 'vitest';
import { MAX_SHARDS, parseShard, shardOf } from './shard.js';

const uid = (i: number): string =>
  `${(i * 2654435761).toString(16).padStart(8, '0')}-1f2e-4d3c-8b7a-${String(i).padStart(12, '0')}`;

describe('shardOf', () => {
  it('puts every uid in exactly one shard, the same one every time, and spreads them', () => {
    const uids = Array.from({ length: 10_000 }, (_, i) => uid(i));
    for (const n of [1, 2, 3, 8]) {
      const sizes = Array.from({ length: n }, () => 0);
      for (const u of uids) {
        const s = shardOf(u, n);
        expect(s).toBe(shardOf(u, n));
        sizes[s] = (sizes[s] ?? 0) + 1;
      }
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(uids.length);
      // Within 10% of an even split.
      for (const size of sizes)
        expect(Math.abs(size - uids.length / n)).toBeLessThan(uids.length / n / 10);
    }
  });
});

describe('parseShard', () => {
  it('reads i/n and refuses everything else', () => {
    expect(parseShard('0/1')).toEqual({ index: 0, count: 1 });
    expect(parseShard('2/3')).toEqual({ index: 2, count: 3 });
    expect(parseShard(`0/${MAX_SHARDS}`)).toEqual({ index: 0, count: MAX_SHARDS });
    for (const bad of [
      '3/3',
      '0/0',
      '1',
      '-1/2',
      '1/2/3',
      ' 0/2',
      `0/${MAX_SHARDS + 1}`,
      'a/b',
      '',
    ])
      expect(parseShard(bad)).toBeUndefined();
  });
});
