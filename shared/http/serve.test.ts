import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as netConnect } from 'node:net';
import { connect } from 'node:tls';
import { Hono } from 'hono';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { mintCa, mintLeaf } from '../../local/controlplane/certs.js';
import type { NodeEnv } from './env.js';
import { createHealth, healthRoutes } from './health.js';
import { serveApp } from './serve.js';
import type { ServedApp } from './serve.js';
import { clientCertificate, signedBy } from './tls.js';

const dir = mkdtempSync(join(tmpdir(), 'vmpool-tls-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A throwaway self-signed certificate for `cn`, written to `<name>.crt`/`<name>.key`. */
function selfSigned(name: string, cn: string): void {
  mintCa(dir, name, cn);
}

/** A client certificate for `cn`, signed by the `ca` pair. */
function signedClient(name: string, cn: string, ca: string): void {
  const pair = { certPath: join(dir, `${ca}.crt`), keyPath: join(dir, `${ca}.key`) };
  mintLeaf(dir, name, { ...pair, certPem: '', keyPem: '' }, { cn, usage: 'client' });
}

/** The CN of the certificate the server presents to a new connection. */
function servedCn(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const subject = s.getPeerCertificate().subject as { CN?: string } | undefined;
      s.end();
      resolve(subject?.CN ?? '');
    });
    s.on('error', reject);
  });
}

function get(port: number, path: string, client?: { cert: Buffer; key: Buffer }) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, rejectUnauthorized: false, agent: false, ...client },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

let served: ServedApp | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

describe('serveApp over HTTPS', () => {
  it('reloads the certificate when the files change', async () => {
    selfSigned('server', 'first');
    const app = new Hono();
    app.get('/', (c) => c.text('hi'));
    served = serveApp(app, {
      port: 0,
      handleSignals: false,
      reloadIntervalMs: 50,
      tls: { certFile: join(dir, 'server.crt'), keyFile: join(dir, 'server.key') },
    });
    const { port } = await served.listening;
    expect(await servedCn(port)).toBe('first');
    expect((await get(port, '/')).body).toBe('hi');

    expect(served.reloadCertificates()).toBe(false);
    selfSigned('server', 'second');
    expect(served.reloadCertificates()).toBe(true);
    expect(await servedCn(port)).toBe('second');

    // The interval picks up a rotation without anyone calling reload.
    selfSigned('server', 'third');
    await new Promise((r) => setTimeout(r, 200));
    expect(await servedCn(port)).toBe('third');
  });

  it('keeps the old certificate when the new key does not match', async () => {
    selfSigned('mismatch', 'good');
    const files = { certFile: join(dir, 'mismatch.crt'), keyFile: join(dir, 'mismatch.key') };
    served = serveApp(new Hono(), {
      port: 0,
      handleSignals: false,
      reloadIntervalMs: 60_000,
      tls: files,
    });
    const { port } = await served.listening;
    selfSigned('other', 'half-rotated');
    writeFileSync(files.certFile, readFileSync(join(dir, 'other.crt')));
    expect(served.reloadCertificates()).toBe(false);
    expect(await servedCn(port)).toBe('good');
  });

  it('requests but does not require a client certificate and exposes it to handlers', async () => {
    selfSigned('ca', 'front-proxy-ca');
    selfSigned('srv', 'server');
    signedClient('client', 'front-proxy-client', 'ca');
    selfSigned('stranger', 'stranger');
    const app = new Hono<NodeEnv>();
    app.get('/whoami', (c) => {
      const cert = clientCertificate(c);
      const caPem = readFileSync(join(dir, 'ca.crt'), 'utf8');
      const leaf = cert?.chain[0];
      return c.json({
        present: cert !== undefined,
        authorized: cert?.authorized ?? false,
        subject: leaf?.subject ?? null,
        signed: leaf === undefined ? false : signedBy(leaf, caPem),
      });
    });
    served = serveApp(app, {
      port: 0,
      handleSignals: false,
      tls: {
        certFile: join(dir, 'srv.crt'),
        keyFile: join(dir, 'srv.key'),
        caFile: join(dir, 'ca.crt'),
        requestCert: true,
      },
    });
    const { port } = await served.listening;
    const anon = JSON.parse((await get(port, '/whoami')).body) as Record<string, unknown>;
    expect(anon).toEqual({ present: false, authorized: false, subject: null, signed: false });

    const client = {
      cert: readFileSync(join(dir, 'client.crt')),
      key: readFileSync(join(dir, 'client.key')),
    };
    const proxy = JSON.parse((await get(port, '/whoami', client)).body) as Record<string, unknown>;
    expect(proxy).toEqual({
      present: true,
      authorized: true,
      subject: 'CN=front-proxy-client',
      signed: true,
    });

    const strangerCert = {
      cert: readFileSync(join(dir, 'stranger.crt')),
      key: readFileSync(join(dir, 'stranger.key')),
    };
    const other = JSON.parse((await get(port, '/whoami', strangerCert)).body) as Record<
      string,
      unknown
    >;
    expect(other).toMatchObject({ present: true, authorized: false, signed: false });
  });

  it('close() flips readiness and stops the server', async () => {
    selfSigned('closing', 'c');
    const health = createHealth();
    served = serveApp(new Hono(), {
      port: 0,
      handleSignals: false,
      health,
      tls: { certFile: join(dir, 'closing.crt'), keyFile: join(dir, 'closing.key') },
    });
    const { port } = await served.listening;
    await served.close();
    expect(health.ready).toBe(false);
    await expect(get(port, '/')).rejects.toThrow();
  });
});

describe('readiness reflects the serving certificate', () => {
  it('starts without certificate files, not ready, and becomes ready once they appear', async () => {
    const health = createHealth();
    const app = new Hono();
    app.route('/', healthRoutes(health));
    const files = { certFile: join(dir, 'later.crt'), keyFile: join(dir, 'later.key') };
    served = serveApp(app, { port: 0, handleSignals: false, health, tls: files });
    const { port } = await served.listening;
    expect(health.notReady()).toBe('no serving certificate loaded');
    await expect(get(port, '/health/readiness')).rejects.toThrow();
    selfSigned('later', 'later');
    expect(served.reloadCertificates()).toBe(true);
    expect(health.ready).toBe(true);
    expect(await get(port, '/health/readiness')).toEqual({ status: 200, body: 'OK' });
  });

  it('is not ready while the certificate has expired', async () => {
    selfSigned('aging', 'aging');
    const validTo = Date.parse(new X509Certificate(readFileSync(join(dir, 'aging.crt'))).validTo);
    let t = Date.now();
    const health = createHealth();
    const app = new Hono();
    app.route('/', healthRoutes(health));
    served = serveApp(app, {
      port: 0,
      handleSignals: false,
      health,
      now: () => new Date(t),
      tls: { certFile: join(dir, 'aging.crt'), keyFile: join(dir, 'aging.key') },
    });
    const { port } = await served.listening;
    expect(await get(port, '/health/readiness')).toEqual({ status: 200, body: 'OK' });
    t = validTo + 1000;
    expect(await get(port, '/health/readiness')).toEqual({
      status: 503,
      body: 'the serving certificate has expired',
    });
  });
});

describe('serveApp over HTTP', () => {
  it('serves plain HTTP and shuts down on SIGTERM', async () => {
    const health = createHealth();
    const app = new Hono();
    app.get('/', (c) => c.text('plain'));
    served = serveApp(app, { port: 0, health });
    const { port } = await served.listening;
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect(await res.text()).toBe('plain');
    process.emit('SIGTERM', 'SIGTERM');
    expect(health.ready).toBe(false);
    await served.close();
    expect(health.ready).toBe(false);
    expect(served.server.listening).toBe(false);
  });
});

describe('idle connections', () => {
  it("stay open past Node's default 5 s, longer than the apiserver's Go client keeps one (90 s)", async () => {
    const app = new Hono();
    app.get('/', (c) => c.text('ok'));
    served = serveApp(app, { port: 0, handleSignals: false });
    const { port } = await served.listening;
    expect((served.server as { keepAliveTimeout: number }).keepAliveTimeout).toBeGreaterThan(
      90_000,
    );
    const socket = netConnect(port, '127.0.0.1');
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString()));
    const ask = async (): Promise<void> => {
      const before = (got.match(/HTTP\/1\.1 200/g) ?? []).length;
      socket.write('GET / HTTP/1.1\r\nHost: vmpool\r\n\r\n');
      for (let i = 0; i < 100 && (got.match(/HTTP\/1\.1 200/g) ?? []).length === before; i++)
        await new Promise((r) => setTimeout(r, 20));
    };
    await ask();
    // On a connection Node closed after its default 5 s, the second request would find it gone.
    await new Promise((r) => setTimeout(r, 5_500));
    expect(socket.destroyed || socket.readyState !== 'open').toBe(false);
    await ask();
    expect((got.match(/HTTP\/1\.1 200/g) ?? []).length).toBe(2);
    socket.destroy();
  }, 15_000);
});

describe('signedBy', () => {
  it('rejects an expired certificate', () => {
    selfSigned('exp', 'e');
    const cert = new X509Certificate(readFileSync(join(dir, 'exp.crt')));
    const pem = readFileSync(join(dir, 'exp.crt'), 'utf8');
    expect(signedBy(cert, pem)).toBe(true);
    expect(signedBy(cert, pem, new Date(Date.parse(cert.validTo) + 86_400_000))).toBe(false);
  });
});
