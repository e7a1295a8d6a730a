import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { buildFunctionApp, cloudEventHandler } from './app.js';
import { createHealth } from './health.js';
import { createLogger } from './log.js';
import { createFunctionMetrics } from './metrics.js';
import { accepted, retryLater } from './responses.js';
import { serveApp } from './serve.js';

const log = createLogger('test', { destination: { write: () => undefined }, pretty: false });

function build() {
  const health = createHealth();
  const metrics = createFunctionMetrics();
  const app = buildFunctionApp({
    name: 'reconcile-pool',
    log,
    metrics,
    health,
    maxBodyBytes: 1024,
  });
  const seen: string[] = [];
  app.post(
    '/',
    cloudEventHandler(log, (event) => {
      seen.push(event.id);
      return Promise.resolve(event.type === 'fail' ? retryLater('later') : accepted());
    }),
  );
  app.get('/boom', () => {
    throw new Error('secret detail');
  });
  return { app, health, metrics, seen };
}

const ce = (id: string, type = 'dev.knative.sources.ping') => ({
  'content-type': 'application/json',
  'ce-specversion': '1.0',
  'ce-id': id,
  'ce-source': 's',
  'ce-type': type,
});

describe('buildFunctionApp', () => {
  it('serves liveness and readiness, readiness flips during shutdown', async () => {
    const { app, health } = build();
    const live = await app.request('/health/liveness');
    expect([live.status, await live.text()]).toEqual([200, 'OK']);
    expect((await app.request('/health/readiness')).status).toBe(200);
    health.setReady(false);
    expect((await app.request('/health/readiness')).status).toBe(503);
    expect((await app.request('/health/liveness')).status).toBe(200);
  });

  it('hands a valid event to the handler and answers an empty 202', async () => {
    const { app, seen } = build();
    const res = await app.request('/', { method: 'POST', headers: ce('e1'), body: '{}' });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    expect(seen).toEqual(['e1']);
  });

  it('served by Node, reads the event from its own headers: repeated ones joined, bad ones refused', async () => {
    const { app, seen } = build();
    const served = serveApp(app, { port: 0, handleSignals: false });
    const { port } = await served.listening;
    const post = (headers: Record<string, string | string[]>): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = request(
          { port, host: '127.0.0.1', method: 'POST', path: '/', headers },
          (res) => {
            res.resume();
            res.on('end', () => {
              resolve(res.statusCode ?? 0);
            });
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
    try {
      expect(await post({ ...ce('e1'), 'ce-traceid': ['a', 'b'] })).toBe(202);
      expect(await post({ ...ce('e2'), 'ce-specversion': '0.3' })).toBe(400);
      expect(await post({ ...ce('e3'), 'content-type': 'text/plain' })).toBe(415);
      expect(seen).toEqual(['e1']);
    } finally {
      await served.close();
    }
  });

  it("builds the event's logger only for a handler that reads it, and then once, with the event's id", async () => {
    const lines: string[] = [];
    const base = createLogger('test', {
      destination: { write: (l: string) => void lines.push(l) },
      pretty: false,
    });
    let children = 0;
    const counting = new Proxy(base, {
      get(target, key, receiver) {
        if (key === 'child') children++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const app = buildFunctionApp({ name: 'reconcile-pool', log: base });
    app.post(
      '/',
      cloudEventHandler(counting, (event, ctx) => {
        if (event.id === 'loud') {
          ctx.log.info('first');
          ctx.log.info('second');
        }
        return Promise.resolve(accepted());
      }),
    );
    expect(
      (await app.request('/', { method: 'POST', headers: ce('quiet'), body: '{}' })).status,
    ).toBe(202);
    expect(children).toBe(0);
    expect(
      (await app.request('/', { method: 'POST', headers: ce('loud'), body: '{}' })).status,
    ).toBe(202);
    expect(children).toBe(1);
    const logged = lines.map((l) => JSON.parse(l) as { eventId?: string; msg?: string });
    expect(logged.filter((l) => l.eventId === 'loud').map((l) => l.msg)).toEqual([
      'first',
      'second',
    ]);
  });

  it('answers 400 to a malformed event without calling the handler', async () => {
    const { app, seen } = build();
    const res = await app.request('/', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toHaveProperty('error');
    expect(seen).toEqual([]);
  });

  it('answers 413 to an oversized body', async () => {
    const { app, seen } = build();
    const res = await app.request('/', {
      method: 'POST',
      headers: ce('big'),
      body: JSON.stringify({ pad: 'x'.repeat(5000) }),
    });
    expect(res.status).toBe(413);
    expect(seen).toEqual([]);
  });

  it('answers 415 to a batch', async () => {
    const { app } = build();
    const res = await app.request('/', {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents-batch+json' },
      body: '[]',
    });
    expect(res.status).toBe(415);
  });

  it('turns an exception into 500 without leaking its text', async () => {
    const { app } = build();
    const res = await app.request('/boom');
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain('secret');
  });

  it('exposes request metrics at /metrics in the text format', async () => {
    const { app } = build();
    await app.request('/', { method: 'POST', headers: ce('e1', 'fail'), body: '{}' });
    const res = await app.request('/metrics');
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(text).toContain(
      'vmpool_request_duration_seconds_count{function="reconcile-pool",method="POST",code="503"} 1',
    );
    expect(text).not.toContain('/health');
  });

  it('answers unknown paths with 404 JSON', async () => {
    const { app } = build();
    const res = await app.request('/nope');
    expect([res.status, await res.json()]).toEqual([404, { error: 'not found' }]);
  });
});
