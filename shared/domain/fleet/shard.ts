/**
 * Shards of a scope: several reconcile-pool instances (each fed its own resync tick) share one
 * cluster's pools, each pool in exactly one shard, by its uid, so no two shards plan the same pool.
 * @module
 */

/** One shard of `count`: pools whose uid hashes to `index`. */
export interface Shard {
  readonly index: number;
  readonly count: number;
}

/** The most shards a scope is split into. */
export const MAX_SHARDS = 1024;

/** The shard (0 … count−1) a pool's uid falls in: FNV-1a over its UTF-16 code units, mod count. */
export function shardOf(uid: string, count: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < uid.length; i++) {
    h ^= uid.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % count;
}

/** `i/n` with 0 ≤ i < n ≤ {@link MAX_SHARDS}, or undefined for anything else. */
export function parseShard(text: string): Shard | undefined {
  const m = /^(\d{1,4})\/(\d{1,4})$/.exec(text);
  if (m === null) return undefined;
  const index = Number(m[1]);
  const count = Number(m[2]);
  return count >= 1 && count <= MAX_SHARDS && index < count ? { index, count } : undefined;
}
