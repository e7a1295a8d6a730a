import { describe, expect, it } from 'vitest';
import { accepted, badRequest, conflict, noContent, retryLater } from './responses.js';

describe('response contract', () => {
  it('success is an empty 202 or 204', async () => {
    for (const [res, status] of [
      [accepted(), 202],
      [noContent(), 204],
    ] as const) {
      expect(res.status).toBe(status);
      expect(await res.text()).toBe('');
      expect(res.headers.get('ce-id')).toBeNull();
    }
  });

  it('failures are JSON {error}', async () => {
    const bad = badRequest('no pool');
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await bad.json()).toEqual({ error: 'no pool' });
    const c = conflict('stale');
    expect([c.status, await c.json()]).toEqual([409, { error: 'stale' }]);
  });

  it('retryLater is 503 with Retry-After', async () => {
    const r = retryLater('api down', 2.2);
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('3');
    expect(await r.json()).toEqual({ error: 'api down' });
    expect(retryLater('x').headers.get('retry-after')).toBe('1');
  });
});
