import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { pool } from '../../../test/unit/builders.js';
import {
  REMEMBERED_REQUESTS,
  recordedRequests,
  recordedTargets,
  requestKey,
  withRequest,
  withTargets,
} from './targets.js';

describe('recorded scaledownwith targets', () => {
  it.each([
    ['absent', undefined, []],
    ['empty', '', []],
    ['not JSON', '{oops', []],
    ['wrong shape', '[{"name":"a"}]', []],
    ['an object', '{"name":"a","uid":"u"}', []],
    ['valid', '[{"name":"a","uid":"u1"}]', [{ name: 'a', uid: 'u1' }]],
  ])('recordedTargets: %s annotation', (_, text, want) => {
    const p = pool(text === undefined ? {} : { annotations: { [keys.scaleDownTargets]: text } });
    expect(recordedTargets(p)).toEqual(want);
  });

  it('withTargets records name and uid only, keeps other annotations, does not mutate', () => {
    const p = pool({ annotations: { other: 'x' } });
    const w = withTargets(p, [{ name: 'a', uid: 'u1', extra: 1 }]);
    expect(w.metadata.annotations).toEqual({
      other: 'x',
      [keys.scaleDownTargets]: '[{"name":"a","uid":"u1"}]',
    });
    expect(p.metadata.annotations).toEqual({ other: 'x' });
    expect(recordedTargets(w)).toEqual([{ name: 'a', uid: 'u1' }]);
  });

  it('withTargets removes the annotation when no targets remain', () => {
    const p = pool({ annotations: { [keys.scaleDownTargets]: '[{"name":"a","uid":"u"}]' } });
    expect(withTargets(p, []).metadata.annotations).toEqual({});
  });

  it('requestKey: 16 hex characters, the same for the same event of the same sender, different otherwise', () => {
    const k = requestKey('alice', 'src', 'id-1');
    expect(k).toMatch(/^[0-9a-f]{16}$/);
    expect(requestKey('alice', 'src', 'id-1')).toBe(k);
    expect(requestKey('alice', 'src', 'id-2')).not.toBe(k);
    expect(requestKey('alice', 'src2', 'id-1')).not.toBe(k);
    // Another sender choosing the same source and id gets a key of its own.
    expect(requestKey('mallory', 'src', 'id-1')).not.toBe(k);
    // The framing keeps "a" + "b\nc" apart from "a\nb" + "c", in every field.
    expect(requestKey('s', 'a', 'b\nc')).not.toBe(requestKey('s', 'a\nb', 'c'));
    expect(requestKey('ab', 'c', 'i')).not.toBe(requestKey('a', 'bc', 'i'));
  });

  it('recordedRequests ignores what is not a key', () => {
    const good = requestKey('u', 's', 'i');
    const p = pool({ annotations: { [keys.scaleDownRequests]: `junk ${good}  ABCDEF0123456789` } });
    expect(recordedRequests(p)).toEqual([good]);
    expect(recordedRequests(pool())).toEqual([]);
  });

  it('withRequest appends once, forgets the oldest beyond the limit, keeps other annotations', () => {
    let p = pool({ annotations: { other: 'x' } });
    const all = Array.from({ length: REMEMBERED_REQUESTS + 3 }, (_, i) =>
      requestKey('u', 's', `e${i}`),
    );
    for (const k of all) p = withRequest(p, k);
    p = withRequest(p, all.at(-1)!);
    expect(recordedRequests(p)).toEqual(all.slice(3));
    expect(p.metadata.annotations?.other).toBe('x');
    const again = withRequest(p, all[5]!);
    expect(recordedRequests(again).at(-1)).toBe(all[5]);
    expect(recordedRequests(again)).toHaveLength(REMEMBERED_REQUESTS);
  });
});
