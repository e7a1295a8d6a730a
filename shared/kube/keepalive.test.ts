import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mintCa, mintLeaf } from '../../local/controlplane/certs.js';
import { createKube } from './client.js';
import { createSend } from './transport.js';
import { kubeConfigFor } from './config.js';

let dir = '';
let server: Server;
let connections = 0;
let url = '';
let cert = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vmpool-keepalive-'));
  const ca = mintCa(dir, 'ca', 'keepalive-ca');
  const leaf = mintLeaf(dir, 'srv', ca, { cn: '127.0.0.1', sans: ['127.0.0.1'], usage: 'server' });
  cert = ca.certPem;
  server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'nope' }));
  });
  server.on('secureConnection', () => connections++);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((ok) => server.close(ok));
  server.closeAllConnections();
  rmSync(dir, { recursive: true, force: true });
});

it('reuses one TLS connection across sequential API calls', async () => {
  const kube = createKube(kubeConfigFor({ server: url, caData: cert }));
  for (let i = 0; i < 5; i++) await kube.getPool('ns', 'p');
  expect(kube.counts().get).toBe(5);
  expect(connections).toBe(1);
});

it('opens parallel connections from one TLS context, each verified against the CA given', async () => {
  const before = connections;
  const kube = createKube(kubeConfigFor({ server: url, caData: cert }));
  const answers = await Promise.all(Array.from({ length: 8 }, () => kube.getPool('ns', 'p')));
  // The server answers 200 with a Status, which the pool model refuses: the exchange happened.
  expect(answers.map((a) => !a.ok && a.message.includes('malformed'))).toEqual(Array(8).fill(true));
  expect(connections - before).toBeGreaterThan(1);
});

it('credentials rotated to another CA take effect: a new identity, verified against it', async () => {
  const other = mintCa(dir, 'other', 'other-ca').certPem;
  let ca = cert;
  const send = createSend({
    getCurrentCluster: () => ({ server: url }),
    applyToHTTPSOptions: (opts) => {
      opts.ca = Buffer.from(ca);
      return Promise.resolve();
    },
  });
  const call = async (): Promise<string> => {
    try {
      return String((await send({ method: 'GET', path: '/x' })).status);
    } catch (err) {
      return (err as Error).message;
    }
  };
  const first = await call();
  ca = other;
  const rotated = await call();
  ca = cert;
  const back = await call();
  expect([first, back]).toEqual(['200', '200']);
  expect(rotated).toMatch(/certificate/i);
});
