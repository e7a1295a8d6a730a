import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { classify, reasonOf, retryAfterMs } from './failure.js';
import { backoffMs, defaultRetryPolicy } from './retry.js';

describe('reasonOf', () => {
  it.each([
    [404, undefined, 'notFound'],
    [409, 'AlreadyExists', 'alreadyExists'],
    [409, 'Conflict', 'conflict'],
    [410, 'Expired', 'transient'],
    [415, undefined, 'invalid'],
    [502, undefined, 'transient'],
  ] as const)('%i %s → %s', (code, reason, expected) => {
    expect(reasonOf(code, reason)).toBe(expected);
  });
});

describe('retryAfterMs', () => {
  it('reads delta-seconds and HTTP dates, ignores garbage', () => {
    expect(retryAfterMs({ 'retry-after': '2' })).toBe(2000);
    const later = new Date(Date.now() + 5000).toUTCString();
    expect(retryAfterMs({ 'retry-after': later })).toBeGreaterThan(3000);
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs({})).toBeUndefined();
  });
});

describe('classify', () => {
  it('reads a parsed Status body (typed APIs) as well as a raw string', () => {
    const e = new ApiException(409, 'x', { reason: 'AlreadyExists', message: 'exists' }, {});
    expect(classify(e).failure).toEqual({
      ok: false,
      reason: 'alreadyExists',
      code: 409,
      message: 'exists',
    });
    const raw = new ApiException(500, 'x', 'upstream exploded', {});
    expect(classify(raw).failure.message).toBe('upstream exploded');
  });

  it('keeps Retry-After only for transient failures', () => {
    expect(classify(new ApiException(429, 'x', '', { 'retry-after': '1' })).retryAfterMs).toBe(
      1000,
    );
    expect(
      classify(new ApiException(409, 'x', '', { 'retry-after': '1' })).retryAfterMs,
    ).toBeUndefined();
  });

  it('rethrows errors that are bugs, not API failures', () => {
    expect(() => classify(new TypeError('oops'))).toThrow('oops');
  });
});

describe('backoffMs', () => {
  it('stays within 50..400 ms and caps Retry-After at 2 s', () => {
    for (let retry = 0; retry < 6; retry++) {
      for (const r of [0, 0.3, 0.999]) {
        const ms = backoffMs(defaultRetryPolicy, retry, () => r);
        expect(ms).toBeGreaterThanOrEqual(50);
        expect(ms).toBeLessThanOrEqual(400);
      }
    }
    expect(backoffMs(defaultRetryPolicy, 0, Math.random, 60_000)).toBe(2000);
  });
});
