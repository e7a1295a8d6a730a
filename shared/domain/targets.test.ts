import { describe, expect, it } from 'vitest';
import { keys } from '../api/index.js';
import { pool } from '../../test/unit/builders.js';
import { recordedTargets, withTargets } from './targets.js';

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
});
