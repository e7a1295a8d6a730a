/**
 * The benchmarks' stand-in for the Broker of knative/base/eventing.yaml, built on `node:http` alone.
 * Its ingress accepts each event from the adapter at once (202). The events the reconcile-pool-watch
 * Trigger's filters pass (all but a disk's add), its dispatcher delivers to reconcile-pool over HTTP,
 * concurrently, redelivering on 5xx, 409 and 429 with exponential backoff (5 retries from 100 ms,
 * as the Trigger's delivery spec is configured). Without it, the adapter's
 * direct sink would send one event at a time and wait for each reconcile, which no deployment of
 * vmpool does.
 *
 * It runs on the clients' CPUs beside the function, so its own cost is taken from the function and
 * the adapters: it is kept to what a delivery needs. Knative's broker runs in pods of its own. The
 * stand-in it replaced, on the web `fetch` and a web `Request` per event, cost the bench process
 * 1.1 to 1.6 s more CPU in a 0→1000 scale-up (3,004 events; docs/performance.md).
 * @module
 */
import { Agent, createServer, request } from 'node:http';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KEEP_ALIVE_MS } from '../shared/http/serve.js';
import {
  filterResult,
  shippedTriggerFilters,
  WATCH_TRIGGER,
} from '../local/controlplane/trigger.js';

/** A moment of a delivery: the Broker sent an event (`delivered`), or the function answered it. */
export interface Mark {
  readonly at: number;
  readonly what: 'delivered' | 'answered';
  /** The event's number (first deliveries counted from 1), shared by its redeliveries. */
  readonly event: number;
}

/** A running stand-in Broker. */
export interface Broker {
  /** Where the adapters send their CloudEvents. */
  readonly sink: string;
  /** Every delivery's moments so far, in order. */
  readonly marks: readonly Mark[];
  /** CloudEvents delivered so far (first deliveries). */
  delivered(): number;
  /** CloudEvents taken in and dropped by the Trigger's filters so far. */
  filtered(): number;
  /** Redeliveries after a 5xx/409/429 answer so far. */
  redelivered(): number;
  /** Deliveries not answered for good yet. */
  inFlight(): number;
  /** When the last delivery was answered for good (performance.now()). */
  lastDone(): number;
  close(): Promise<void>;
}

/** Headers of a CloudEvent in binary mode that the Broker passes on (Knative's dispatcher does). */
function forwarded(h: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(h))
    if (k === 'content-type' || k.startsWith('ce-') || k === 'traceparent') out[k] = v;
  return out;
}

/** A binary-mode event's context attribute, from its `ce-` header. */
function attribute(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[`ce-${name}`];
  return Array.isArray(v) ? v.join(',') : v;
}

/** The status of one POST of `body` to `target`; no answer counts as 503, as the dispatcher does. */
function post(
  target: URL,
  agent: Agent,
  headers: OutgoingHttpHeaders,
  body: Buffer,
): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      target,
      { method: 'POST', agent, headers: { ...headers, 'content-length': body.length } },
      (res) => {
        res.once('end', () => {
          resolve(res.statusCode ?? 503);
        });
        res.once('error', () => {
          resolve(503);
        });
        res.resume();
      },
    );
    req.once('error', () => {
      resolve(503);
    });
    req.end(body);
  });
}

/** Starts the stand-in Broker, delivering to `target` (reconcile-pool's URL). */
export async function startBroker(target: string): Promise<Broker> {
  const url = new URL('/', target);
  // Go's HTTP client, as Knative's dispatcher uses it, keeps idle connections and opens as many as
  // there are deliveries in flight.
  const agent = new Agent({ keepAlive: true });
  const marks: Mark[] = [];
  const filters = shippedTriggerFilters(WATCH_TRIGGER);
  let filtered = 0;
  let delivered = 0;
  let redelivered = 0;
  let inFlight = 0;
  let lastDone = performance.now();
  const dispatch = async (headers: OutgoingHttpHeaders, body: Buffer): Promise<void> => {
    const event = ++delivered;
    inFlight++;
    try {
      for (let attempt = 0; ; attempt++) {
        marks.push({ at: performance.now(), what: 'delivered', event });
        const status = await post(url, agent, headers, body);
        marks.push({ at: performance.now(), what: 'answered', event });
        const again = status >= 500 || status === 409 || status === 429;
        if (!again || attempt >= 5) return;
        redelivered++;
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
      }
    } finally {
      inFlight--;
      lastDone = performance.now();
    }
  };
  const ingress = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    // An adapter that gave up on a request: nothing was accepted, it sends the event again.
    req.once('error', () => undefined);
    req.once('end', () => {
      res.writeHead(202).end();
      if (filterResult(filters, (name) => attribute(req.headers, name)) === 'fail') filtered++;
      else void dispatch(forwarded(req.headers), Buffer.concat(chunks));
    });
  });
  // The adapter's Go client keeps an idle connection for 90 s; Node would close it after 5 s and
  // reset a request sent on it at that moment.
  ingress.keepAliveTimeout = KEEP_ALIVE_MS;
  ingress.headersTimeout = KEEP_ALIVE_MS + 5_000;
  await new Promise<void>((resolve) => ingress.listen(0, '127.0.0.1', resolve));
  const { port } = ingress.address() as AddressInfo;
  return {
    sink: `http://127.0.0.1:${port}/`,
    marks,
    delivered: () => delivered,
    filtered: () => filtered,
    redelivered: () => redelivered,
    inFlight: () => inFlight,
    lastDone: () => lastDone,
    close: () =>
      new Promise<void>((resolve) => {
        ingress.close(() => {
          agent.destroy();
          resolve();
        });
        // The ingress answers at once: no request of an adapter is cut halfway.
        ingress.closeAllConnections();
      }),
  };
}
