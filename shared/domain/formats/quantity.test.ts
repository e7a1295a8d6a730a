import { describe, expect, it } from 'vitest';
import { quantityValue } from './quantity.js';

describe('quantityValue', () => {
  it.each<[string | number, number]>([
    [1073741824, 2 ** 30],
    [0, 0],
    ['1073741824', 2 ** 30],
    ['30Gi', 30 * 2 ** 30],
    ['100Mi', 100 * 2 ** 20],
    ['512Ki', 512 * 1024],
    ['1Ti', 2 ** 40],
    ['1.5Gi', 1.5 * 2 ** 30],
    ['1G', 1e9],
    ['10M', 1e7],
    ['2k', 2000],
    ['500m', 0.5],
    ['1e3', 1000],
    ['1E6', 1e6],
    ['.5Gi', 2 ** 29],
    [' 30Gi ', 30 * 2 ** 30],
    ['-1Gi', -(2 ** 30)],
    ['+2Mi', 2 * 2 ** 20],
  ])('%j is %d base units', (q, want) => {
    expect(quantityValue(q)).toBe(want);
  });

  it.each(['abc', '30GB', '30gi', 'Gi', '', '1.2.3Gi', '1 Gi'])('%j is malformed', (q) => {
    expect(quantityValue(q)).toBeUndefined();
  });

  it('undefined has no value', () => {
    expect(quantityValue(undefined)).toBeUndefined();
  });

  it('orders binary and decimal suffixes by byte value', () => {
    expect(quantityValue('1Gi')!).toBeGreaterThan(quantityValue('1G')!);
    expect(quantityValue('1024Mi')).toBe(quantityValue('1Gi'));
  });
});
