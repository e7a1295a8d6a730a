import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startBroker } from '../../bench/broker.js';
import type { Broker } from '../../bench/broker.js';

interface Seen {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A function stand-in answering each delivery with the next of `statuses` (then 202). */
async function target(statuses: number[]): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      seen.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.writeHead(statuses.shift() ?? 202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 8_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const EVENT = {
  'content-type': 'application/json',
  'ce-specversion': '1.0',
  'ce-id': 'e1',
  'ce-type': 'dev.knative.apiserver.resource.add',
  'ce-source': 'https://kubernetes.default',
  'ce-kind': 'VirtualMachine',
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  authorization: 'Bearer adapter-token',
};

describe('the benchmarks’ stand-in Broker', () => {
  const open: { broker?: Broker; server?: Server }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.broker?.close();
      const { server } = o;
      if (server !== undefined) await new Promise((r) => server.close(r));
    }
  });

  it('accepts at once, forwards the CloudEvent headers and body, and redelivers 503 and 429', async () => {
    const t = await target([503, 429]);
    const broker = await startBroker(t.url);
    open.push({ broker, server: t.server });
    const res = await fetch(broker.sink, { method: 'POST', headers: EVENT, body: '{"a":1}' });
    expect(res.status).toBe(202);
    await until(() => broker.inFlight() === 0 && t.seen.length === 3);
    expect(broker.delivered()).toBe(1);
    expect(broker.redelivered()).toBe(2);
    for (const s of t.seen) {
      expect(s.body).toBe('{"a":1}');
      expect(s.headers['ce-id']).toBe('e1');
      expect(s.headers['ce-type']).toBe(EVENT['ce-type']);
      expect(s.headers.traceparent).toBe(EVENT.traceparent);
      expect(s.headers['content-type']).toBe('application/json');
      // Knative's dispatcher does not pass the adapter's credentials on.
      expect(s.headers.authorization).toBeUndefined();
    }
    const marks = broker.marks.map((m) => `${m.what}:${m.event}`);
    expect(marks).toEqual([
      'delivered:1',
      'answered:1',
      'delivered:1',
      'answered:1',
      'delivered:1',
      'answered:1',
    ]);
  });

  it('does not redeliver an event the function refused as malformed (400)', async () => {
    const t = await target([400]);
    const broker = await startBroker(t.url);
    open.push({ broker, server: t.server });
    await fetch(broker.sink, { method: 'POST', headers: EVENT, body: '{}' });
    await until(() => broker.inFlight() === 0 && t.seen.length === 1);
    await new Promise((r) => setTimeout(r, 150));
    expect(t.seen).toHaveLength(1);
    expect(broker.redelivered()).toBe(0);
  });

  it(
    'counts a delivery nobody answers as a 503 and gives up after 5 retries',
    { timeout: 15_000 },
    async () => {
      const broker = await startBroker('http://127.0.0.1:1');
      open.push({ broker });
      await fetch(broker.sink, { method: 'POST', headers: EVENT, body: '{}' });
      await until(() => broker.inFlight() === 0);
      expect(broker.delivered()).toBe(1);
      expect(broker.redelivered()).toBe(5);
      expect(broker.marks.filter((m) => m.what === 'answered')).toHaveLength(6);
    },
  );

  it("drops what the watch Trigger's filters drop (a disk's add), acknowledged but not delivered", async () => {
    const t = await target([]);
    const broker = await startBroker(t.url);
    open.push({ broker, server: t.server });
    const disk = { ...EVENT, 'ce-kind': 'VirtualDisk' };
    const add = await fetch(broker.sink, { method: 'POST', headers: disk, body: '{}' });
    expect(add.status).toBe(202);
    const update = { ...disk, 'ce-id': 'e2', 'ce-type': 'dev.knative.apiserver.resource.update' };
    await fetch(broker.sink, { method: 'POST', headers: update, body: '{}' });
    await until(() => broker.inFlight() === 0 && t.seen.length === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(t.seen.map((s) => s.headers['ce-id'])).toEqual(['e2']);
    expect(broker.filtered()).toBe(1);
    expect(broker.delivered()).toBe(1);
  });
});
