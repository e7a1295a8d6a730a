import { describe, expect, it } from 'vitest';
import { nested } from '../../../test/unit/builders.js';
import { canonicalJson } from './hash.js';
import { cloneJson } from './json.js';

describe('a template nested thousands of levels deep (a pass-through field has no schema bound)', () => {
  it('is copied without overflowing the stack, as data', () => {
    const deep = nested(20_000);
    const copy = cloneJson(deep);
    expect(canonicalJson(copy)).toBe(canonicalJson(deep));
    let bottom = copy as { deeper?: unknown };
    while (typeof bottom.deeper === 'object') bottom = bottom.deeper as { deeper?: unknown };
    bottom.deeper = 'changed';
    expect(canonicalJson(copy)).not.toBe(canonicalJson(deep));
    const proto = cloneJson(
      JSON.parse('{"__proto__":{"polluted":true},"a":[1,{"b":2}]}') as object,
    );
    expect(Object.keys(proto)).toEqual(['__proto__', 'a']);
    expect((proto as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Array.isArray((proto as { a: unknown }).a)).toBe(true);
  });
});
