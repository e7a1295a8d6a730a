import { describe, expect, it } from 'vitest';
import { warningTexts } from './warnings.js';

describe('warningTexts', () => {
  it('reads one warning, several joined by node-fetch, and escaped quotes; nothing from nothing', () => {
    expect(warningTexts('299 - "unknown field \\"spec.cpus\\""')).toEqual([
      'unknown field "spec.cpus"',
    ]);
    expect(
      warningTexts('299 - "unknown field \\"spec.a\\"", 299 - "duplicate field \\"b, c\\""'),
    ).toEqual(['unknown field "spec.a"', 'duplicate field "b, c"']);
    expect(warningTexts(undefined)).toEqual([]);
    expect(warningTexts('')).toEqual([]);
  });
});
