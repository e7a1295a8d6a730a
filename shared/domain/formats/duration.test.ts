import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseDuration } from './duration.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;

describe('parseDuration', () => {
  it.each<[string, number]>([
    ['0', 0],
    ['30m', 30 * M],
    ['1h', H],
    ['1h30m', H + 30 * M],
    ['1.5h', 1.5 * H],
    ['.5h', 0.5 * H],
    ['5.h', 5 * H],
    ['90s', 90 * S],
    ['250ms', 250],
    ['1h0m0s', H],
    ['2h45m30s', 2 * H + 45 * M + 30 * S],
    ['1000us', 1],
    ['1000µs', 1],
    ['1000μs', 1],
    ['1000000ns', 1],
    ['0s', 0],
    ['0m', 0],
  ])('accepts %j as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 9);
  });

  it.each([
    ['1d', 'days are not a Go unit'],
    ['abc', 'no number'],
    ['-5m', 'signs are refused'],
    ['+5m', 'signs are refused'],
    ['', 'empty'],
    ['5', 'missing unit'],
    ['00', 'missing unit (only a bare 0 is allowed)'],
    ['.m', 'a lone dot is no number'],
    ['m', 'unit without number'],
    ['1h 30m', 'spaces'],
    ['1H', 'units are case sensitive'],
    ['30m5', 'trailing number without unit'],
    [' 30m', 'leading space'],
  ])('refuses %j (%s)', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it('agrees with a reference computation for generated valid strings', () => {
    const units: Record<string, number> = { h: H, m: M, s: S, ms: 1 };
    const part = fc.record({
      int: fc.integer({ min: 0, max: 999 }),
      frac: fc.option(fc.integer({ min: 0, max: 99 }), { nil: undefined }),
      unit: fc.constantFrom('h', 'm', 's', 'ms'),
    });
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), (parts) => {
        const text = parts
          .map((p) => `${p.int}${p.frac === undefined ? '' : `.${p.frac}`}${p.unit}`)
          .join('');
        const want = parts.reduce(
          (sum, p) =>
            sum +
            Number(`${p.int}${p.frac === undefined ? '' : `.${p.frac}`}`) * (units[p.unit] ?? 0),
          0,
        );
        const got = parseDuration(text);
        expect(got).toBeDefined();
        expect(got!).toBeCloseTo(want, 6);
      }),
    );
  });

  it('refuses any string containing a character outside digits, dot and unit letters', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 8 }).filter((s) => /[^0-9.nsuµμmh]/.test(s)),
        (s) => {
          expect(parseDuration(s)).toBeUndefined();
        },
      ),
    );
  });
});
