import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limitBody } from './body-limit.js';

let server: ReturnType<typeof serve>;
let port = 0;
/** The lengths of the bodies the handler read. */
const seen: string[] = [];

beforeAll(async () => {
  const app = new Hono();
  app.use('*', limitBody(100));
  app.post('/', async (c) => {
    seen.push(String((await c.req.text()).length));
    return c.text('ok');
  });
  await new Promise<void>((ok) => {
    server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => {
      ok();
    });
  });
  port = (server.address() as AddressInfo).port;
});

afterAll(() => {
  server.close();
});

/** POSTs `body` in one piece with a Content-Length, or in two chunks without one. */
function post(body: string, chunked: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/',
        headers: chunked ? {} : { 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          resolve(res.statusCode ?? 0);
        });
      },
    );
    req.on('error', reject);
    if (chunked) {
      req.write(body.slice(0, body.length / 2));
      req.end(body.slice(body.length / 2));
    } else req.end(body);
  });
}

describe('limitBody through the Node server', () => {
  it.each([
    ['Content-Length', false],
    ['chunked', true],
  ] as const)(
    '%s: passes a body at the limit to the handler whole, refuses one byte more',
    async (_what, chunked) => {
      seen.length = 0;
      expect(await post('x'.repeat(100), chunked)).toBe(200);
      expect(await post('x'.repeat(101), chunked)).toBe(413);
      expect(seen).toEqual(['100']);
    },
  );
});
