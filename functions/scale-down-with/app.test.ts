import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nock from 'nock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachinePool } from '../../shared/api/index.js';
import { MAX_TARGETS, keys } from '../../shared/api/index.js';
import { serveApp } from '../../shared/http/index.js';
import { requestText } from '../../local/controlplane/http.js';
import type { Answer } from '../../local/controlplane/http.js';
import { TARGET_READS } from '../../shared/reconcile/index.js';
import type { ClientCertificate } from '../../shared/http/index.js';
import type { Status } from '../../shared/http/index.js';
import { mintCerts } from '../../test/functions/certs.js';
import type { TestCerts } from '../../test/functions/certs.js';
import type { ReviewOfRights } from '../../test/functions/fixtures.js';
import {
  API,
  BASE,
  guardNock,
  reviewOfRights,
  statusBody,
  testKube,
} from '../../test/functions/fixtures.js';
import { pool, vm } from '../../test/unit/builders.js';
import { buildScaleDownApp } from './app.js';
import type { ScaleDownAppDeps } from './app.js';
import { testLog } from '../../test/logs.js';

const SUB = 'subresources.virtualization.deckhouse.io';
const SUB_BASE = `/apis/${SUB}/v1alpha2`;
const CM = '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication';
const poolPath = (ns: string, name: string): string =>
  `${BASE}/namespaces/${ns}/virtualmachinepools/${name}`;
const vmPath = (ns: string, name: string): string =>
  `${BASE}/namespaces/${ns}/virtualmachines/${name}`;
const scaleDownPath = (ns: string, name: string): string =>
  `${SUB_BASE}/namespaces/${ns}/virtualmachinepools/${name}/scaledownwith`;

let certs: TestCerts;
const unmatched = guardNock();

beforeAll(() => {
  certs = mintCerts();
});

type CertChoice = 'proxy' | 'intruder' | 'rogue' | 'serverUsage' | 'none';

function certOf(choice: CertChoice): ClientCertificate | undefined {
  const pem = {
    proxy: certs.proxyPem,
    intruder: certs.intruderPem,
    rogue: certs.roguePem,
    serverUsage: certs.serverUsagePem,
    none: '',
  }[choice];
  return pem === '' ? undefined : { authorized: false, chain: [new X509Certificate(pem)] };
}

function build(cert: CertChoice = 'proxy', more: Partial<ScaleDownAppDeps> = {}) {
  return buildScaleDownApp({
    kube: testKube(),
    log: testLog('test'),
    clientCert: () => certOf(cert),
    ...more,
  });
}

/** The ConfigMap's document (the API server publishes the uid header since 1.32). */
function frontProxyDocument(uidHeaders = '["X-Remote-Uid"]') {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'extension-apiserver-authentication', namespace: 'kube-system' },
    data: {
      'requestheader-client-ca-file': certs.caPem,
      'requestheader-allowed-names': '["front-proxy-client"]',
      'requestheader-username-headers': '["X-Remote-User"]',
      'requestheader-uid-headers': uidHeaders,
      'requestheader-group-headers': '["X-Remote-Group"]',
      'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
    },
  };
}

/** kube-system's extension-apiserver-authentication ConfigMap with the minted CA. */
function frontProxyConfigMap(): nock.Scope {
  return nock(API).get(CM).reply(200, frontProxyDocument());
}

/** A request the front proxy forwards for alice. */
function forwarded(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'X-Remote-User': 'alice',
      'X-Remote-Group': 'system:authenticated',
      'X-Remote-Extra-Scopes': 'read',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
}

const explicitPool = (): VirtualMachinePool => pool({ scaleDownPolicy: 'Explicit', replicas: 3 });

async function statusOf(res: Response): Promise<Status> {
  return (await res.json()) as Status;
}

describe('scale-down-with: discovery', () => {
  it('GET /apis lists the group', async () => {
    const res = await build().request('/apis');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: SUB,
          versions: [{ groupVersion: `${SUB}/v1alpha2`, version: 'v1alpha2' }],
          preferredVersion: { groupVersion: `${SUB}/v1alpha2`, version: 'v1alpha2' },
        },
      ],
    });
    expect(unmatched.seen).toEqual([]);
  });

  it('GET /apis/<group> describes it', async () => {
    const res = await build().request(`/apis/${SUB}`);
    expect(await res.json()).toMatchObject({
      kind: 'APIGroup',
      name: SUB,
      preferredVersion: { groupVersion: `${SUB}/v1alpha2`, version: 'v1alpha2' },
    });
  });

  it('GET /apis/<group>/v1alpha2 lists only the scaledownwith and victims subresources (the meta-resource would shadow the CRD in kubectl)', async () => {
    const res = await build().request(SUB_BASE);
    const doc = (await res.json()) as {
      kind: string;
      groupVersion: string;
      resources: Array<{ name: string; kind: string; namespaced: boolean; verbs: string[] }>;
    };
    expect(doc.kind).toBe('APIResourceList');
    expect(doc.groupVersion).toBe(`${SUB}/v1alpha2`);
    expect(doc.resources.map((r) => [r.name, r.kind, r.namespaced, r.verbs])).toEqual([
      ['virtualmachinepools/scaledownwith', 'VirtualMachinePoolScaleDownWith', true, ['create']],
      ['virtualmachinepools/victims', 'VirtualMachinePoolVictims', true, ['get']],
    ]);
  });
});

describe('scale-down-with: authentication and authorization', () => {
  it('no client certificate → 401 Status, and nothing is read (not even the front-proxy CA)', async () => {
    const res = await build('none').request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(401);
    expect(await statusOf(res)).toMatchObject({
      apiVersion: 'v1',
      kind: 'Status',
      status: 'Failure',
      code: 401,
      reason: 'Unauthorized',
    });
    expect(unmatched.seen).toEqual([]);
  });

  it('X-Remote-User forged without a certificate → 401, no SubjectAccessReview', async () => {
    const res = await build('none').request(
      scaleDownPath('ci', 'runners'),
      forwarded(
        { targets: ['runners-aaaaa'] },
        { 'X-Remote-User': 'system:admin', 'X-Remote-Group': 'system:masters' },
      ),
    );
    expect(res.status).toBe(401);
    expect(unmatched.seen).toEqual([]);
  });

  it('a certificate not signed by the front-proxy CA → 401', async () => {
    const cm = frontProxyConfigMap();
    const res = await build('rogue').request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(401);
    expect((await statusOf(res)).message).toBe(
      'the client certificate is not signed by the front-proxy CA',
    );
    cm.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a CA-signed certificate whose CN is not an allowed name → 401', async () => {
    const cm = frontProxyConfigMap();
    const res = await build('intruder').request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(401);
    expect((await statusOf(res)).message).toContain('"intruder" is not an allowed front proxy');
    cm.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('no front-proxy CA in kube-system → 503', async () => {
    const cm = nock(API).get(CM).reply(404, statusBody(404, 'NotFound'));
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(503);
    cm.done();
  });

  it('SubjectAccessReview denied → 403, and the review asked the right question', async () => {
    const seen: ReviewOfRights[] = [];
    const scopes = [frontProxyConfigMap(), reviewOfRights(false, seen)];
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(403);
    const s = await statusOf(res);
    expect(s).toMatchObject({ kind: 'Status', code: 403, reason: 'Forbidden' });
    expect(s.message).toContain(
      'User "alice" cannot create resource "virtualmachinepools/scaledownwith"',
    );
    for (const scope of scopes) scope.done();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.spec.user).toBe('alice');
    expect(seen[0]?.spec.groups).toEqual(['system:authenticated']);
    expect(seen[0]?.spec.extra).toEqual({ scopes: ['read'] });
    expect(seen[0]?.spec.resourceAttributes).toEqual({
      namespace: 'ci',
      group: SUB,
      resource: 'virtualmachinepools',
      subresource: 'scaledownwith',
      name: 'runners',
      verb: 'create',
    });
    // Nothing about the pool was read.
    expect(unmatched.seen).toEqual([]);
  });

  it('the front-proxy CA is read once per app, not per request', async () => {
    const app = build();
    const cm = frontProxyConfigMap();
    const denied = reviewOfRights(false);
    expect(
      (await app.request(scaleDownPath('ci', 'runners'), forwarded({ targets: ['a'] }))).status,
    ).toBe(403);
    const denied2 = reviewOfRights(false);
    expect(
      (await app.request(scaleDownPath('ci', 'runners'), forwarded({ targets: ['a'] }))).status,
    ).toBe(403);
    cm.done();
    denied.done();
    denied2.done();
    expect(unmatched.seen).toEqual([]);
  });
});

describe('scale-down-with: POST scaledownwith', () => {
  it('removes the named members: one conditioned PUT of the pool → 201 with per-target causes', async () => {
    const p = explicitPool();
    let written: VirtualMachinePool | undefined;
    const methods: string[] = [];
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(200, vm(p, 'runners-aaaaa'))
      .get(vmPath('ci', 'runners-bbbbb'))
      .reply(200, vm(p, 'runners-bbbbb'))
      .put(poolPath('ci', 'runners'), (body: VirtualMachinePool) => {
        written = body;
        return true;
      })
      .query({ fieldManager: 'vmpool' })
      .reply(200, (_uri, body) => body as object);
    scope.on('request', (req: { method: string }) => {
      methods.push(req.method);
    });
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      // runners-aaaaa twice: counted once.
      forwarded({ targets: ['runners-aaaaa', 'runners-bbbbb', 'runners-aaaaa'] }),
    );
    expect(res.status).toBe(201);
    const s = await statusOf(res);
    expect(s).toMatchObject({ apiVersion: 'v1', kind: 'Status', status: 'Success', code: 201 });
    expect(s.details?.causes).toEqual([
      { reason: 'removed', field: 'runners-aaaaa', message: 'runners-aaaaa: removed' },
      { reason: 'removed', field: 'runners-bbbbb', message: 'runners-bbbbb: removed' },
      { reason: 'duplicate', field: 'runners-aaaaa', message: 'runners-aaaaa: duplicate' },
    ]);
    scope.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
    // Each distinct target read once, then exactly one write.
    expect(methods).toEqual(['GET', 'GET', 'GET', 'PUT']);
    expect(written?.metadata.resourceVersion).toBe('100');
    expect(written?.spec.replicas).toBe(1);
    expect(JSON.parse(written?.metadata.annotations?.[keys.scaleDownTargets] ?? 'null')).toEqual([
      { name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' },
      { name: 'runners-bbbbb', uid: 'uid-runners-bbbbb' },
    ]);
  });

  it('a target of another pool → 400 and no PUT', async () => {
    const p = explicitPool();
    const foreign = vm(pool({ name: 'other', uid: 'pool-uid-2' }), 'other-zzzzz');
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(200, vm(p, 'runners-aaaaa'))
      .get(vmPath('ci', 'other-zzzzz'))
      .reply(200, foreign);
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa', 'other-zzzzz'] }),
    );
    expect(res.status).toBe(400);
    expect(await statusOf(res)).toMatchObject({
      status: 'Failure',
      code: 400,
      reason: 'BadRequest',
      message:
        'target VirtualMachine "other-zzzzz" does not belong to VirtualMachinePool "runners"',
    });
    scope.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a target that does not exist → 400 and no PUT', async () => {
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, explicitPool())
      .get(vmPath('ci', 'runners-nope0'))
      .reply(404, statusBody(404, 'NotFound'));
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-nope0'] }),
    );
    expect(res.status).toBe(400);
    expect((await statusOf(res)).message).toBe(
      'target VirtualMachine "runners-nope0" not found in namespace "ci"',
    );
    scope.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('an empty target list → 400 with the reference message, nothing read or written', async () => {
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(scaleDownPath('ci', 'runners'), forwarded({ targets: [] }));
    expect(res.status).toBe(400);
    expect((await statusOf(res)).message).toBe('scaleDownWith requires a non-empty targets list');
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('dryRun ["All"] → 201 and no PUT', async () => {
    const p = explicitPool();
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(200, vm(p, 'runners-aaaaa'));
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'], dryRun: ['All'] }),
    );
    expect(res.status).toBe(201);
    const s = await statusOf(res);
    expect(s.message).toContain('dry run');
    expect(s.details?.causes).toEqual([
      { reason: 'removed', field: 'runners-aaaaa', message: 'runners-aaaaa: removed' },
    ]);
    scope.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a PUT that loses a race (409) is retried on a fresh read', async () => {
    const p = explicitPool();
    const newer = { ...p, metadata: { ...p.metadata, resourceVersion: '105' } };
    const rvs: Array<string | undefined> = [];
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(200, vm(p, 'runners-aaaaa'))
      .put(poolPath('ci', 'runners'), (body: VirtualMachinePool) => {
        rvs.push(body.metadata.resourceVersion);
        return true;
      })
      .query(true)
      .reply(409, statusBody(409, 'Conflict', 'the object has been modified'))
      .get(poolPath('ci', 'runners'))
      .reply(200, newer)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(200, vm(p, 'runners-aaaaa'))
      .put(poolPath('ci', 'runners'), (body: VirtualMachinePool) => {
        rvs.push(body.metadata.resourceVersion);
        return true;
      })
      .query(true)
      .reply(200, (_uri, body) => body as object);
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(201);
    expect(rvs).toEqual(['100', '105']);
    scope.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a pool that does not exist → 404 Status', async () => {
    const scope = nock(API).get(poolPath('ci', 'ghost')).reply(404, statusBody(404, 'NotFound'));
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(scaleDownPath('ci', 'ghost'), forwarded({ targets: ['x'] }));
    expect(res.status).toBe(404);
    expect(await statusOf(res)).toMatchObject({
      code: 404,
      reason: 'NotFound',
      message: 'virtualmachinepools.virtualization.deckhouse.io "ghost" not found',
      details: { name: 'ghost' },
    });
    scope.done();
    for (const o of others) o.done();
  });

  it('a body that is not JSON → 400', async () => {
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(scaleDownPath('ci', 'runners'), forwarded('{"targets": ['));
    expect(res.status).toBe(400);
    expect((await statusOf(res)).message).toContain('expected VirtualMachinePoolScaleDownWith');
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a body of the wrong shape → 400', async () => {
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: 'runners-aaaaa' }),
    );
    expect(res.status).toBe(400);
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });
});

describe('scale-down-with: the pool meta-resource', () => {
  it('GET returns the pool metadata under the subresources group', async () => {
    const seen: ReviewOfRights[] = [];
    const scope = nock(API).get(poolPath('ci', 'runners')).reply(200, explicitPool());
    const others = [frontProxyConfigMap(), reviewOfRights(true, seen)];
    const res = await build().request(`${SUB_BASE}/namespaces/ci/virtualmachinepools/runners`, {
      headers: { 'X-Remote-User': 'alice' },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      apiVersion: `${SUB}/v1alpha2`,
      kind: 'VirtualMachinePool',
      metadata: { name: 'runners', namespace: 'ci', uid: 'pool-uid-1' },
    });
    expect(seen[0]?.spec.resourceAttributes.verb).toBe('get');
    scope.done();
    for (const o of others) o.done();
  });
});

describe('scale-down-with: the identity the front proxy sends', () => {
  it('a certificate of the front-proxy CA without the clientAuth usage → 401', async () => {
    const cm = frontProxyConfigMap();
    const res = await build('serverUsage').request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(401);
    expect((await statusOf(res)).message).toBe(
      'the client certificate is not valid for client authentication',
    );
    cm.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a malformed percent-encoding in an extra header key → 401 (was 500), no review', async () => {
    const cm = frontProxyConfigMap();
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: ['runners-aaaaa'] }, { 'X-Remote-Extra-bad%zzkey': 'v' }),
    );
    expect(res.status).toBe(401);
    expect(await statusOf(res)).toMatchObject({ kind: 'Status', reason: 'Unauthorized' });
    cm.done();
    expect(unmatched.seen).toEqual([]);
  });

  describe('over a real TLS connection, header line by header line', () => {
    let dir = '';
    beforeAll(() => {
      nock.enableNetConnect('127.0.0.1');
      dir = mkdtempSync(join(tmpdir(), 'vmpool-sdw-'));
      writeFileSync(join(dir, 'tls.crt'), certs.servingPem);
      writeFileSync(join(dir, 'tls.key'), certs.servingKeyPem);
    });
    afterAll(() => {
      rmSync(dir, { recursive: true, force: true });
      nock.disableNetConnect();
    });

    /** POSTs a scaledownwith to a fresh server as the front proxy does: a header line per value. */
    async function post(headers: Record<string, string | string[]>): Promise<Answer> {
      const app = buildScaleDownApp({ kube: testKube(), log: testLog('test') });
      const served = serveApp(app, {
        port: 0,
        hostname: '127.0.0.1',
        handleSignals: false,
        tls: { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key'), requestCert: true },
      });
      const { port } = await served.listening;
      try {
        return await requestText({
          url: `https://127.0.0.1:${String(port)}${scaleDownPath('ci', 'runners')}`,
          ca: certs.caPem,
          client: { certPem: certs.proxyPem, keyPem: certs.proxyKeyPem },
          headers,
          body: { targets: ['runners-aaaaa'] },
        });
      } finally {
        await served.close();
      }
    }

    it('a group named "a,system:masters" stays one group; uid and every extra value reach the review', async () => {
      const seen: ReviewOfRights[] = [];
      const scopes = [frontProxyConfigMap(), reviewOfRights(false, seen)];
      const res = await post({
        'X-Remote-User': 'bob',
        'X-Remote-Uid': 'uid-of-bob',
        'X-Remote-Group': ['a,system:masters', 'system:authenticated'],
        'X-Remote-Extra-Scopes': ['read', 'write,admin'],
        'X-Remote-Extra-Acme.com%2fproject': 'p1',
      });
      expect(res.status).toBe(403);
      for (const scope of scopes) scope.done();
      expect(seen[0]?.spec).toMatchObject({
        user: 'bob',
        uid: 'uid-of-bob',
        groups: ['a,system:masters', 'system:authenticated'],
        extra: { scopes: ['read', 'write,admin'], 'acme.com/project': ['p1'] },
      });
    });

    it('X-Remote-Uid is ignored when the API server does not publish it as a uid header', async () => {
      const seen: ReviewOfRights[] = [];
      const scopes = [
        nock(API).get(CM).reply(200, frontProxyDocument('')),
        reviewOfRights(false, seen),
      ];
      await post({ 'X-Remote-User': 'bob', 'X-Remote-Uid': 'forged' });
      for (const scope of scopes) scope.done();
      expect(seen[0]?.spec.uid).toBeUndefined();
    });
  });
});

describe('scale-down-with: the front-proxy CA cache', () => {
  it('is re-read after its time, kept through a failed read for a while, then dropped (503)', async () => {
    let t = Date.now();
    const app = build('proxy', { now: () => new Date(t) });
    const ask = () =>
      app.request(scaleDownPath('ci', 'runners'), forwarded({ targets: ['runners-aaaaa'] }));
    const first = [frontProxyConfigMap(), reviewOfRights(false)];
    expect((await ask()).status).toBe(403);
    for (const s of first) s.done();
    // A minute later the read fails (three attempts): the copy read before is still trusted.
    t += 61_000;
    const failing = nock(API).get(CM).times(3).reply(500, statusBody(500, 'InternalError'));
    const stale = reviewOfRights(false);
    expect((await ask()).status).toBe(403);
    failing.done();
    stale.done();
    // Within the retry interval nothing is read again.
    t += 1_000;
    const quiet = reviewOfRights(false);
    expect((await ask()).status).toBe(403);
    quiet.done();
    expect(unmatched.seen).toEqual([]);
    // Five minutes after the last good read, the copy is no longer trusted.
    t += 300_000;
    const stillFailing = nock(API).get(CM).times(3).reply(500, statusBody(500, 'InternalError'));
    const res = await ask();
    expect(res.status).toBe(503);
    expect((await statusOf(res)).message).toBe('cannot read the front-proxy CA from kube-system');
    stillFailing.done();
  });

  it('a certificate of a rotated CA has it read again at once, not after its time', async () => {
    let t = Date.now();
    let cert: ClientCertificate | undefined = certOf('proxy');
    const app = buildScaleDownApp({
      kube: testKube(),
      log: testLog('test'),
      clientCert: () => cert,
      now: () => new Date(t),
    });
    const ask = () =>
      app.request(scaleDownPath('ci', 'runners'), forwarded({ targets: ['runners-aaaaa'] }));
    const first = [frontProxyConfigMap(), reviewOfRights(false)];
    expect((await ask()).status).toBe(403);
    for (const s of first) s.done();
    // The cluster moved to a new front-proxy CA (the rogue CA stands in for it) ten seconds later.
    t += 10_000;
    cert = { authorized: false, chain: [new X509Certificate(certs.roguePem)] };
    const doc = frontProxyDocument();
    const rotated = nock(API)
      .get(CM)
      .reply(200, {
        ...doc,
        data: { ...doc.data, 'requestheader-client-ca-file': certs.rogueCaPem },
      });
    const second = reviewOfRights(false);
    expect((await ask()).status).toBe(403);
    rotated.done();
    second.done();
    expect(unmatched.seen).toEqual([]);
  });
});

describe('scale-down-with: every error is a metav1.Status', () => {
  it.each([
    ['an unknown path under /apis', 'GET', `${SUB_BASE}/namespaces/ci/nothing`, 404, 'NotFound'],
    ['a wrong method', 'DELETE', scaleDownPath('ci', 'runners'), 404, 'NotFound'],
  ])('%s → %s Status', async (_what, method, path, code, reason) => {
    const res = await build().request(path, { method });
    expect(res.status).toBe(code);
    expect(await statusOf(res)).toMatchObject({ apiVersion: 'v1', kind: 'Status', code, reason });
  });

  it('a body over the limit → 413 Status', async () => {
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded('x'.repeat(2 * 1024 * 1024)),
    );
    expect(res.status).toBe(413);
    expect(await statusOf(res)).toMatchObject({ kind: 'Status', reason: 'RequestEntityTooLarge' });
  });

  it('an exception → 500 Status InternalError, without its text', async () => {
    const kube = testKube();
    const broken = { ...kube, getConfigMapData: () => Promise.reject(new Error('secret detail')) };
    const app = buildScaleDownApp({
      kube: broken,
      log: testLog('test'),
      clientCert: () => certOf('proxy'),
    });
    const res = await app.request(scaleDownPath('ci', 'runners'), forwarded({ targets: ['a'] }));
    expect(res.status).toBe(500);
    const s = await statusOf(res);
    expect(s).toMatchObject({ kind: 'Status', code: 500, reason: 'InternalError' });
    expect(s.message).not.toContain('secret');
  });
});

describe('scale-down-with: bounded work per request', () => {
  it.each([
    ['CI', 'runners'],
    ['ci', 'Runners_1'],
    ['ci.x', 'runners'],
  ])('namespace %s, pool %s → 400 before any API call', async (ns, name) => {
    const res = await build().request(scaleDownPath(ns, name), forwarded({ targets: ['a'] }));
    expect(res.status).toBe(400);
    expect(await statusOf(res)).toMatchObject({ kind: 'Status', reason: 'BadRequest' });
    expect(unmatched.seen).toEqual([]);
  });

  it(`a 1 MiB body of targets costs the access check and nothing more (at most ${String(MAX_TARGETS)} targets)`, async () => {
    const targets: string[] = [];
    for (let size = 20; size < 1024 * 1024 - 40; size += 20)
      targets.push(`runners-${String(targets.length).padStart(8, '0')}`);
    const kube = testKube();
    const app = buildScaleDownApp({
      kube,
      log: testLog('test'),
      clientCert: () => certOf('proxy'),
    });
    const scopes = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await app.request(scaleDownPath('ci', 'runners'), forwarded({ targets }));
    expect(res.status).toBe(400);
    expect((await statusOf(res)).message).toContain(`at most ${String(MAX_TARGETS)} targets`);
    for (const s of scopes) s.done();
    // The CA and the review; no pool, no VM.
    expect(kube.counts()).toEqual({ get: 1, 'get:ok': 1, sar: 1, 'sar:ok': 1 });
    expect(unmatched.seen).toEqual([]);
  });

  it('a caller that hangs up stops the work: the reads after it are never sent', async () => {
    const p = explicitPool();
    const gone = new AbortController();
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, () => {
        setTimeout(() => {
          gone.abort();
        }, 10);
        return p;
      })
      .get(/\/virtualmachines\//)
      .times(8)
      .delay(300)
      .reply(200, (uri) => vm(p, uri.split('/').pop() ?? ''));
    const kube = testKube();
    const app = buildScaleDownApp({
      kube,
      log: testLog('test'),
      clientCert: () => certOf('proxy'),
    });
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const targets = Array.from({ length: 40 }, (_, i) => `runners-${String(i)}`);
    const res = await app.request(scaleDownPath('ci', 'runners'), {
      ...forwarded({ targets }),
      signal: gone.signal,
    });
    // Nobody reads this answer; what matters is what was not done.
    expect(res.status).toBeGreaterThanOrEqual(500);
    for (const o of others) o.done();
    // The pool and at most one round of target reads (cut short); nothing written.
    expect(kube.counts().get).toBeLessThanOrEqual(2 + TARGET_READS);
    expect(kube.counts().update ?? 0).toBe(0);
    scope.persist(false);
  });
});

describe('scale-down-with: audit', () => {
  it('logs who asked (user, groups) with the pool and the outcome', async () => {
    const lines: string[] = [];
    const app = buildScaleDownApp({
      kube: testKube(),
      log: testLog('test', 'silent', lines),
      clientCert: () => certOf('proxy'),
    });
    const scopes = [frontProxyConfigMap(), reviewOfRights(false)];
    await app.request(scaleDownPath('ci', 'runners'), forwarded({ targets: ['runners-aaaaa'] }));
    for (const s of scopes) s.done();
    const audit = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'scaledownwith');
    expect(audit).toMatchObject({
      pool: 'ci/runners',
      user: 'alice',
      groups: ['system:authenticated'],
      code: 403,
    });
  });
});

describe('scale-down-with: fleet control', () => {
  const victimsPath = (ns: string, name: string, query = ''): string =>
    `${SUB_BASE}/namespaces/${ns}/virtualmachinepools/${name}/victims${query}`;
  const get = (): RequestInit => ({ ...forwarded({}), method: 'GET', body: null });

  /** POSTs a scaledownwith of `target` to pool `p` and answers the refusal, checking no PUT went. */
  async function refused(p: VirtualMachinePool, target: VirtualMachine, code: number) {
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', target.metadata.name ?? ''))
      .reply(200, target);
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(
      scaleDownPath('ci', 'runners'),
      forwarded({ targets: [target.metadata.name] }),
    );
    expect(res.status).toBe(code);
    const s = await statusOf(res);
    scope.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
    return s;
  }

  it('POST scaledownwith naming a protected VM → 409 naming VM and annotation, and no PUT', async () => {
    const p = explicitPool();
    const guarded = vm(p, 'runners-ggggg', { annotations: { [keys.protected]: 'true' } });
    const s = await refused(p, guarded, 409);
    expect(s).toMatchObject({ kind: 'Status', code: 409, reason: 'Conflict' });
    expect(s.message).toContain('"runners-ggggg"');
    expect(s.message).toContain(`${keys.protected}: "true"`);
  });

  it('POST scaledownwith naming a claimed VM → 409 naming the claim, and no PUT', async () => {
    const p = explicitPool();
    const held = vm(p, 'runners-ggggg', {
      annotations: { [keys.claimedBy]: 'job-123', [keys.claimUid]: 'uid-job-123' },
      labels: { [keys.claimed]: 'true' },
    });
    const s = await refused(p, held, 409);
    expect(s).toMatchObject({ kind: 'Status', code: 409, reason: 'Conflict' });
    expect(s.message).toContain('claimed by VirtualMachineClaim "job-123"');
  });

  it('POST scaledownwith while the pool is paused → 409 saying so, and no PUT', async () => {
    const p = explicitPool();
    p.spec.paused = true;
    const s = await refused(p, vm(p, 'runners-ggggg'), 409);
    expect(s).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(s.message).toBe(
      'VirtualMachinePool "runners" is paused (spec.paused: true): nothing is removed until it is unpaused',
    );
  });

  it('POST scaledownwith naming a standby member → 400, and no PUT', async () => {
    const p = explicitPool();
    const spare = vm(p, 'runners-sssss', { labels: { [keys.standby]: 'true' } });
    const s = await refused(p, spare, 400);
    expect(s.message).toContain('standby member');
  });

  it('GET victims?count=2: authorized as get on virtualmachinepools/victims, answers the ranking', async () => {
    const p = pool({ replicas: 3 });
    const at = (m: number) =>
      new Date(Date.UTC(2025, 0, 1, 12, m)).toISOString().replace('.000', '');
    const members = [
      vm(p, 'runners-aaaaa', { created: at(1) }),
      vm(p, 'runners-bbbbb', { created: at(2), annotations: { [keys.protected]: 'true' } }),
      vm(p, 'runners-ccccc', { created: at(3) }),
    ];
    const seen: ReviewOfRights[] = [];
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query({ labelSelector: `${keys.poolUid}=pool-uid-1`, limit: '500' })
      .reply(200, { metadata: {}, items: members });
    const others = [frontProxyConfigMap(), reviewOfRights(true, seen)];
    const res = await build().request(victimsPath('ci', 'runners', '?count=2'), get());
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      apiVersion: `${SUB}/v1alpha2`,
      kind: 'VirtualMachinePoolVictims',
      metadata: { name: 'runners', namespace: 'ci' },
      policy: 'NewestFirst',
      count: 2,
      victims: [
        { name: 'runners-ccccc', reason: 'Age', protected: false },
        { name: 'runners-aaaaa', reason: 'OnlyCandidate', protected: false },
      ],
      leaving: [],
    });
    expect(seen[0]?.spec.resourceAttributes).toEqual({
      namespace: 'ci',
      group: SUB,
      resource: 'virtualmachinepools',
      subresource: 'victims',
      name: 'runners',
      verb: 'get',
    });
    scope.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('GET victims of a pool with a member that does not parse → 409 naming it, no ranking', async () => {
    const p = pool({ replicas: 2 });
    const unreadable = { ...vm(p, 'runners-bbbbb'), spec: { runPolicy: 'SomeFutureMode' } };
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query({ labelSelector: `${keys.poolUid}=pool-uid-1`, limit: '500' })
      .reply(200, { metadata: {}, items: [vm(p, 'runners-aaaaa'), unreadable] });
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const res = await build().request(victimsPath('ci', 'runners'), get());
    expect(res.status).toBe(409);
    const s = await statusOf(res);
    expect(s).toMatchObject({ kind: 'Status', code: 409, reason: 'Conflict' });
    expect(s.message).toContain(
      'VirtualMachine ci/runners-bbbbb claims this pool but does not parse',
    );
    scope.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it.each(['?count=0', '?count=-1', '?count=two', '?count=1001'])(
    'GET victims%s → 400, nothing read',
    async (query) => {
      const others = [frontProxyConfigMap(), reviewOfRights(true)];
      const res = await build().request(victimsPath('ci', 'runners', query), get());
      expect(res.status).toBe(400);
      expect((await statusOf(res)).message).toBe('count must be an integer from 1 to 1000');
      for (const o of others) o.done();
      expect(unmatched.seen).toEqual([]);
    },
  );

  it('GET victims of a pool that does not exist → 404; without the right → 403', async () => {
    const scope = nock(API).get(poolPath('ci', 'nope')).reply(404, statusBody(404, 'NotFound'));
    const others = [frontProxyConfigMap(), reviewOfRights(true)];
    const app = build();
    expect((await app.request(victimsPath('ci', 'nope'), get())).status).toBe(404);
    const denied = reviewOfRights(false);
    const res = await app.request(victimsPath('ci', 'runners'), get());
    expect(res.status).toBe(403);
    expect((await statusOf(res)).message).toContain(
      'cannot get resource "virtualmachinepools/victims"',
    );
    scope.done();
    denied.done();
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });
});

describe('scale-down-with: a configured group (vmpool’s own, where the platform serves the default)', () => {
  const OWN = 'subresources.vmpool.virtualization.deckhouse.io';
  const ownApp = () =>
    buildScaleDownApp({
      kube: testKube(),
      log: testLog('test'),
      clientCert: () => certOf('proxy'),
      group: OWN,
    });

  it('serves discovery for that group only', async () => {
    const app = ownApp();
    expect(await (await app.request('/apis')).json()).toMatchObject({
      groups: [{ name: OWN, preferredVersion: { groupVersion: `${OWN}/v1alpha2` } }],
    });
    expect(await (await app.request(`/apis/${OWN}/v1alpha2`)).json()).toMatchObject({
      groupVersion: `${OWN}/v1alpha2`,
      resources: [
        { name: 'virtualmachinepools/scaledownwith', verbs: ['create'] },
        { name: 'virtualmachinepools/victims', verbs: ['get'] },
      ],
    });
    expect((await app.request(SUB_BASE)).status).toBe(404);
  });

  it('routes scaledownwith under it and authorizes callers in it', async () => {
    frontProxyConfigMap();
    const seen: ReviewOfRights[] = [];
    reviewOfRights(false, seen);
    const res = await ownApp().request(
      `/apis/${OWN}/v1alpha2/namespaces/ci/virtualmachinepools/runners/scaledownwith`,
      forwarded({ targets: ['runners-bbbbb'] }),
    );
    expect(res.status).toBe(403);
    expect((await statusOf(res)).message).toContain(`in API group "${OWN}"`);
    expect(seen[0]?.spec.resourceAttributes).toMatchObject({
      group: OWN,
      resource: 'virtualmachinepools',
      subresource: 'scaledownwith',
      verb: 'create',
    });
    expect(unmatched.seen).toEqual([]);
  });
});
