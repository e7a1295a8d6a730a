import { mkdtempSync, writeFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { leanCredentials } from './credentials.js';
import type { Credentials } from './transport.js';

const dir = (): string => mkdtempSync(join(tmpdir(), 'vmpool-creds-'));
const b64 = (s: string): string => Buffer.from(s).toString('base64');

function kubeconfig(cluster: object, user: object): object {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  };
}

async function applied(c: Credentials | undefined): Promise<RequestOptions> {
  const opts: RequestOptions = { headers: { accept: 'application/json' } };
  await c?.applyToHTTPSOptions(opts);
  return opts;
}

describe('leanCredentials', () => {
  it('a JSON kubeconfig with inline CA, client certificate and token', async () => {
    const d = dir();
    const file = join(d, 'config');
    writeFileSync(
      file,
      JSON.stringify(
        kubeconfig(
          { server: 'https://10.0.0.1:6443', 'certificate-authority-data': b64('CA') },
          { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY'), token: 't1' },
        ),
      ),
    );
    const c = await leanCredentials({ KUBECONFIG: file });
    expect(c?.getCurrentCluster()?.server).toBe('https://10.0.0.1:6443');
    const o = await applied(c);
    const text = (x: unknown) => (Buffer.isBuffer(x) ? x.toString('utf8') : x);
    expect([text(o.ca), text(o.cert), text(o.key)]).toEqual(['CA', 'CERT', 'KEY']);
    expect(o.headers).toEqual({ accept: 'application/json', authorization: 'Bearer t1' });
    expect(o.rejectUnauthorized).toBeUndefined();
  });

  it('a YAML kubeconfig with files relative to it, no verification and a server name', async () => {
    const d = dir();
    writeFileSync(join(d, 'ca.crt'), 'CA-FILE');
    writeFileSync(join(d, 'tok'), 'from-file\n');
    writeFileSync(
      join(d, 'config'),
      [
        'apiVersion: v1',
        'clusters:',
        '- name: c',
        '  cluster: {server: "https://k.test", certificate-authority: ca.crt, insecure-skip-tls-verify: true, tls-server-name: api}',
        'users:',
        '- name: u',
        '  user: {tokenFile: tok}',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
      ].join('\n'),
    );
    const o = await applied(await leanCredentials({ KUBECONFIG: join(d, 'config') }));
    expect(String(o.ca)).toBe('CA-FILE');
    expect(o.rejectUnauthorized).toBe(false);
    expect(o.servername).toBe('api');
    expect(o.headers).toMatchObject({ authorization: 'Bearer from-file' });
  });

  it.each([
    ['an exec plugin', { server: 'https://k.test' }, { exec: { command: 'aws' } }],
    ['an auth provider', { server: 'https://k.test' }, { 'auth-provider': { name: 'oidc' } }],
    ['basic auth', { server: 'https://k.test' }, { username: 'a', password: 'b' }],
    ['a proxy', { server: 'https://k.test', 'proxy-url': 'http://p:3128' }, { token: 't' }],
    ['plain HTTP with verification', { server: 'http://k.test' }, { token: 't' }],
  ])('leaves %s to client-node', async (_what, cluster, user) => {
    const file = join(dir(), 'config');
    writeFileSync(file, JSON.stringify(kubeconfig(cluster, user)));
    expect(await leanCredentials({ KUBECONFIG: file })).toBeUndefined();
  });

  it('leaves several kubeconfig files (a merge) to client-node', async () => {
    expect(await leanCredentials({ KUBECONFIG: '/a:/b' })).toBeUndefined();
  });

  it('in a pod: the service account, its token read again after a minute', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const sa = dir();
      writeFileSync(join(sa, 'ca.crt'), 'SA-CA');
      writeFileSync(join(sa, 'token'), 'tok-1');
      const env = {
        HOME: dir(),
        KUBERNETES_SERVICE_HOST: 'fd00::1',
        KUBERNETES_SERVICE_PORT: '443',
      };
      const c = await leanCredentials(env, sa);
      expect(c?.getCurrentCluster()?.server).toBe('https://[fd00::1]:443');
      expect((await applied(c)).headers).toMatchObject({ authorization: 'Bearer tok-1' });
      writeFileSync(join(sa, 'token'), 'tok-2');
      expect((await applied(c)).headers).toMatchObject({ authorization: 'Bearer tok-1' });
      vi.advanceTimersByTime(61_000);
      const o = await applied(c);
      expect(o.headers).toMatchObject({ authorization: 'Bearer tok-2' });
      expect(String(o.ca)).toBe('SA-CA');
    } finally {
      vi.useRealTimers();
    }
  });

  it('no kubeconfig and not in a pod: left to client-node (its localhost default)', async () => {
    expect(await leanCredentials({ HOME: dir() }, dir())).toBeUndefined();
  });
});
