/**
 * HTTP to the API server over node:https with keep-alive, authenticated by a kubeconfig. The funnel
 * sends its few request shapes itself instead of through client-node's generated clients, whose
 * hundreds of model classes and node-fetch stack made up most of a function's start-up time.
 * @module
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { RequestOptions } from 'node:https';
import { KeyObject } from 'node:crypto';
import { createSecureContext } from 'node:tls';

type Material = RequestOptions['ca' | 'cert' | 'key' | 'pfx' | 'passphrase'];

/** One piece of TLS material as text: Buffers by their bytes, so equal credentials give equal keys. */
function text(m: Material): string {
  if (m === undefined) return '';
  if (typeof m === 'string') return m;
  if (Buffer.isBuffer(m)) return m.toString('base64');
  if (m instanceof KeyObject) return text(m.export({ format: 'pem', type: 'pkcs8' }));
  if (Array.isArray(m)) return m.map((x: unknown) => text(x as Material)).join(',');
  return JSON.stringify(m);
}

/**
 * The key of a TLS identity. Computed on every request, so Buffers are encoded natively (base64)
 * rather than through JSON.stringify, which spelled each byte out as a number.
 */
function identity(
  plain: boolean,
  rejectUnauthorized: boolean | undefined,
  servername: string | undefined,
  tls: Readonly<Record<'ca' | 'cert' | 'key' | 'pfx' | 'passphrase', Material>>,
): string {
  return [
    String(plain),
    String(rejectUnauthorized),
    servername ?? '',
    text(tls.ca),
    text(tls.cert),
    text(tls.key),
    text(tls.pfx),
    text(tls.passphrase),
  ].join('|');
}

/**
 * Where the API server is and how a request to it authenticates. client-node's `KubeConfig` is one
 * (tests, `npm start`, exotic kubeconfigs); `loadCredentials` makes a lean one for the common cases.
 */
export interface Credentials {
  /** The current cluster; `server` is its URL (`https://host:port`, maybe with a path prefix). */
  getCurrentCluster(): { readonly server: string } | null;
  /** Fills TLS material and auth headers into `opts` (an agent it sets is replaced, see below). */
  applyToHTTPSOptions(opts: RequestOptions): Promise<void>;
}

/** One request. */
export interface HttpCall {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path below the server URL, query string included. */
  readonly path: string;
  /** Sent as JSON. */
  readonly body?: unknown;
  readonly signal?: AbortSignal;
}

/** The answer: status, headers and the body text (any status). */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

/** Sends requests; rejects only on network errors, aborts and bugs. */
export type Send = (call: HttpCall) => Promise<HttpAnswer>;

/** A query string from defined values (`?a=1&b=x`, or empty). */
export function query(params: Readonly<Record<string, string | number | undefined>>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.append(k, String(v));
  const s = q.toString();
  return s === '' ? '' : `?${s}`;
}

/**
 * A {@link Send} over `creds`. client-node's KubeConfig builds a fresh https.Agent on every call, so
 * every request paid a TCP and TLS handshake; here each distinct TLS identity (CA, client cert, key,
 * verification) gets one keep-alive agent, re-derived per call so rotated credentials still take
 * effect. Proxy agents (other classes) are used as given. Responses are not compressed: on a
 * cluster network gzip costs the API server more CPU than it saves.
 */
export function createSend(creds: Credentials, maxSockets = 128): Send {
  const agents = new Map<string, HttpsAgent | HttpAgent>();
  /** The keep-alive agent for the TLS identity of `opts` (set directly, or on the agent given). */
  const pooled = (opts: RequestOptions, plain: boolean): RequestOptions['agent'] => {
    const given = opts.agent;
    const kind = given instanceof HttpAgent ? given.constructor : undefined;
    if (given !== undefined && kind !== HttpsAgent && kind !== HttpAgent) return given;
    const o = given === undefined ? opts : (given as HttpsAgent).options;
    const tls = {
      ca: o.ca,
      cert: o.cert,
      key: o.key,
      pfx: o.pfx,
      passphrase: o.passphrase,
    };
    const key = identity(plain, o.rejectUnauthorized, o.servername, tls);
    let agent = agents.get(key);
    if (agent === undefined) {
      // One TLS context per identity: without it every new connection parses the CA, certificate
      // and key again (a third of the raw client's CPU at 128 requests in flight).
      agent = plain
        ? new HttpAgent({ keepAlive: true, maxSockets })
        : new HttpsAgent({
            ...tls,
            rejectUnauthorized: o.rejectUnauthorized,
            servername: o.servername,
            secureContext: createSecureContext(tls),
            keepAlive: true,
            maxSockets,
          });
      agents.set(key, agent);
    }
    return agent;
  };
  return async function send(call: HttpCall): Promise<HttpAnswer> {
    const server = creds.getCurrentCluster()?.server;
    if (server === undefined) throw new Error('the kubeconfig has no current cluster');
    const url = new URL(server);
    const payload = call.body === undefined ? undefined : JSON.stringify(call.body);
    const opts: RequestOptions = {
      headers: {
        accept: 'application/json',
        ...(payload === undefined
          ? {}
          : {
              'content-type': 'application/json',
              'content-length': String(Buffer.byteLength(payload)),
            }),
      },
    };
    await creds.applyToHTTPSOptions(opts);
    const prefix = url.pathname.replace(/\/$/, '');
    const plain = url.protocol === 'http:';
    const request = plain ? httpRequest : httpsRequest;
    return new Promise<HttpAnswer>((resolve, reject) => {
      const req = request(
        {
          ...opts,
          agent: pooled(opts, plain),
          method: call.method,
          protocol: url.protocol,
          hostname: url.hostname.replace(/^\[|\]$/g, ''),
          port: url.port,
          path: `${prefix}${call.path}`,
          ...(call.signal === undefined ? {} : { signal: call.signal }),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              text: Buffer.concat(chunks).toString('utf8'),
            });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  };
}
