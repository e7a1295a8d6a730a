import { describe, expect, it } from 'vitest';
import { classify, reasonOf, refusal, retryAfterMs } from './failure.js';
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

describe('refusal', () => {
  it('reads the metav1.Status body, or keeps a text body as the message', () => {
    const body = JSON.stringify({ kind: 'Status', reason: 'AlreadyExists', message: 'exists' });
    expect(refusal(409, {}, body).failure).toEqual({
      ok: false,
      reason: 'alreadyExists',
      code: 409,
      message: 'exists',
    });
    expect(refusal(500, {}, 'upstream exploded').failure.message).toBe('upstream exploded');
    expect(refusal(401, {}, '').failure.message).toBe('HTTP 401');
  });

  it('keeps Retry-After only for transient failures', () => {
    expect(refusal(429, { 'retry-after': '1' }, '').retryAfterMs).toBe(1000);
    expect(refusal(409, { 'retry-after': '1' }, '').retryAfterMs).toBeUndefined();
  });
});

describe('classify', () => {
  it('a request without an answer is transient: system, TLS and abort errors', () => {
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    const tls = Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' });
    const abort = Object.assign(new Error('aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
    for (const e of [reset, tls, abort])
      expect(classify(e).failure).toMatchObject({ reason: 'transient', code: 0 });
  });

  it('rethrows errors that are bugs, not API failures', () => {
    expect(() => classify(new TypeError('oops'))).toThrow('oops');
    const bad = Object.assign(new TypeError('bad header'), { code: 'ERR_INVALID_CHAR' });
    expect(() => classify(bad)).toThrow('bad header');
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
