/**
 * A seeded fault-injecting HTTPS proxy between the functions and the kube-apiserver: latency, 5xx,
 * 429 with Retry-After, 409, connections dropped before or after the request reached the API server,
 * and stalled response streams, on a fixed share of requests. Clients authenticate to it with a
 * bearer token (which it never forwards: it talks to the API server with the admin certificate), so
 * the run also proves that token never reaches a log.
 * @module
 */
import { createServer, request } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { createKube } from '../../shared/kube/index.js';
import { kubeConfigFor } from '../../shared/kube/config.js';
import type { Kube } from '../../shared/kube/index.js';
import { servingCert } from '../e2e/harness.js';
import { adminKubeConfig, rng } from './kit.js';

/** The kinds of fault injected. */
export const FAULTS = [
  'latency',
  'status5xx',
  'throttle429',
  'conflict409',
  'dropBefore',
  'dropAfter',
  'stall',
] as const;
export type Fault = (typeof FAULTS)[number];

/** A running proxy. */
export interface FaultProxy {
  readonly url: string;
  readonly caPem: string;
  /** The bearer token clients use (must never appear in a log). */
  readonly token: string;
  readonly requests: () => number;
  readonly injected: () => Record<Fault, number>;
  /** A Kube through the proxy (short timeout, so stalls end). */
  kube(): Kube;
  close(): Promise<void>;
}

const b64 = (s: string | undefined): Buffer => Buffer.from(s ?? '', 'base64');

function status(res: ServerResponse, code: number, reason: string, headers: object = {}): void {
  res.writeHead(code, { 'content-type': 'application/json', ...headers });
  res.end(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Status',
      status: 'Failure',
      code,
      reason,
      message: `chaos proxy: injected ${code} ${reason}`,
    }),
  );
}

/** Starts the proxy on 127.0.0.1; `rate` of the requests get a fault. */
export async function startFaultProxy(seed: number, rate = 0.1): Promise<FaultProxy> {
  const admin: KubeConfig = adminKubeConfig();
  const cluster = admin.getCurrentCluster();
  const user = admin.getCurrentUser();
  if (cluster === null || user === null) throw new Error('admin kubeconfig has no cluster or user');
  const upstream = new URL(cluster.server);
  const upstreamTls = { ca: b64(cluster.caData), cert: b64(user.certData), key: b64(user.keyData) };
  const { cert, caPem } = servingCert('chaos-proxy', 'vmpool-system');
  const dice = rng(seed);
  const injected = Object.fromEntries(FAULTS.map((f) => [f, 0])) as Record<Fault, number>;
  let requests = 0;
  const sockets = new Set<Socket>();
  const token = `chaos-secret-${seed.toString(36)}-token`;

  const forward = (
    req: IncomingMessage,
    body: Buffer,
    onResponse: (up: IncomingMessage) => void,
    onError: () => void,
  ): void => {
    const headers = { ...req.headers };
    delete headers.authorization;
    delete headers.host;
    const up = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers,
        ...upstreamTls,
      },
      onResponse,
    );
    up.on('error', onError);
    up.end(body);
  };

  let turn = 0;
  let conflictOwed = false;
  const server = createServer({ key: cert.keyPem, cert: cert.certPem }, (req, res) => {
    requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      // Kinds take turns, so even a short run injects every one of them.
      let fault: Fault | undefined =
        dice.next() < rate ? FAULTS[turn++ % FAULTS.length] : undefined;
      // A conflict answers a write: a read that draws one gets a server error, and the conflict is
      // owed to the next write.
      if (fault === 'conflict409' && req.method === 'GET') {
        fault = 'status5xx';
        conflictOwed = true;
      } else if (fault === undefined && conflictOwed && req.method !== 'GET') {
        fault = 'conflict409';
      }
      if (fault === 'conflict409') conflictOwed = false;
      if (fault !== undefined) injected[fault]++;
      const pipe = (up: IncomingMessage): void => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      };
      const fail = (): void => {
        if (!res.headersSent) status(res, 502, 'BadGateway');
        else res.destroy();
      };
      switch (fault) {
        case undefined:
          forward(req, body, pipe, fail);
          return;
        case 'latency':
          setTimeout(
            () => {
              forward(req, body, pipe, fail);
            },
            50 + dice.int(400),
          );
          return;
        case 'status5xx':
          status(res, dice.chance(0.5) ? 500 : 503, 'InternalError');
          return;
        case 'throttle429':
          status(res, 429, 'TooManyRequests', { 'retry-after': '1' });
          return;
        case 'conflict409':
          status(res, 409, 'Conflict');
          return;
        case 'dropBefore':
          req.socket.destroy();
          return;
        case 'dropAfter':
          // The API server did the work; the caller never hears about it.
          forward(
            req,
            body,
            (up) => {
              up.resume();
              up.on('end', () => req.socket.destroy());
            },
            () => req.socket.destroy(),
          );
          return;
        case 'stall':
          forward(
            req,
            body,
            (up) => {
              res.writeHead(up.statusCode ?? 200, { 'content-type': 'application/json' });
              up.once('data', (c: Buffer) => {
                res.write(c.subarray(0, Math.floor(c.length / 2)));
                up.destroy();
                // Nothing more ever comes; the client's timeout must end it.
                setTimeout(() => req.socket.destroy(), 10_000).unref();
              });
            },
            fail,
          );
          return;
      }
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    caPem,
    token,
    requests: () => requests,
    injected: () => ({ ...injected }),
    kube: () =>
      createKube(kubeConfigFor({ server: url, token, caData: caPem }), {
        timeoutMs: 1500,
        reportingInstance: 'vmpool-chaos',
      }),
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          r();
        });
      }),
  };
}
