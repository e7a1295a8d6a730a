import { X509Certificate } from 'node:crypto';
import nock from 'nock';
import { beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../shared/api/index.js';
import { keys } from '../../shared/api/index.js';
import { requestKey } from '../../shared/domain/index.js';
import type { ClientCertificate } from '../../shared/http/index.js';
import type { Status } from '../../shared/http/index.js';
import { mintCerts } from '../../test/functions/certs.js';
import type { TestCerts } from '../../test/functions/certs.js';
import {
  API,
  BASE,
  binaryEvent,
  guardNock,
  statusBody,
  testKube,
} from '../../test/functions/fixtures.js';
import { pool, vm } from '../../test/unit/builders.js';
import { SCALE_DOWN_WITH_EVENT } from '../../shared/api/index.js';
import { buildScaleDownApp } from './app.js';
import { testLog } from '../../test/logs.js';

const SUB = 'subresources.virtualization.deckhouse.io';
const SUB_BASE = `/apis/${SUB}/v1alpha2`;
const CM = '/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication';
const SAR = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
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

type CertChoice = 'proxy' | 'intruder' | 'rogue' | 'none';

function certOf(choice: CertChoice): ClientCertificate | undefined {
  const pem = {
    proxy: certs.proxyPem,
    intruder: certs.intruderPem,
    rogue: certs.roguePem,
    none: '',
  }[choice];
  return pem === '' ? undefined : { authorized: false, chain: [new X509Certificate(pem)] };
}

function build(cert: CertChoice = 'proxy') {
  return buildScaleDownApp({
    kube: testKube(),
    log: testLog('test'),
    clientCert: () => certOf(cert),
    acceptEvents: true,
  });
}

/** kube-system's extension-apiserver-authentication ConfigMap with the minted CA. */
function frontProxyConfigMap(): nock.Scope {
  return nock(API)
    .get(CM)
    .reply(200, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'extension-apiserver-authentication', namespace: 'kube-system' },
      data: {
        'requestheader-client-ca-file': certs.caPem,
        'requestheader-allowed-names': '["front-proxy-client"]',
        'requestheader-username-headers': '["X-Remote-User"]',
        'requestheader-group-headers': '["X-Remote-Group"]',
        'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
      },
    });
}

interface SarBody {
  spec: {
    user: string;
    groups: string[];
    extra?: Record<string, string[]>;
    resourceAttributes: Record<string, string>;
  };
}

/** The SubjectAccessReview answer; the request body lands in `seen`. */
function sar(allowed: boolean, seen: SarBody[] = []): nock.Scope {
  return nock(API)
    .post(SAR, (body: SarBody) => {
      seen.push(body);
      return true;
    })
    .query(true)
    .reply(201, (_uri, body) => ({
      ...(body as object),
      status: allowed ? { allowed: true } : { allowed: false, reason: 'no RBAC policy matched' },
    }));
}

/** A request the front proxy forwards for alice. */
function forwarded(body: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'X-Remote-User': 'alice',
      'X-Remote-Group': 'system:authenticated,team',
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

  it('GET /apis/<group>/v1alpha2 lists only the scaledownwith subresource (the meta-resource would shadow the CRD in kubectl)', async () => {
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
    ]);
  });
});

describe('scale-down-with: authentication and authorization', () => {
  it('no client certificate → 401 Status', async () => {
    const cm = frontProxyConfigMap();
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
    cm.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('X-Remote-User forged without a certificate → 401, no SubjectAccessReview', async () => {
    const cm = frontProxyConfigMap();
    const res = await build('none').request(
      scaleDownPath('ci', 'runners'),
      forwarded(
        { targets: ['runners-aaaaa'] },
        { 'X-Remote-User': 'system:admin', 'X-Remote-Group': 'system:masters' },
      ),
    );
    expect(res.status).toBe(401);
    cm.done();
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
    const seen: SarBody[] = [];
    const scopes = [frontProxyConfigMap(), sar(false, seen)];
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
    expect(seen[0]?.spec.groups).toEqual(['system:authenticated', 'team']);
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
    const denied = sar(false);
    expect(
      (await app.request(scaleDownPath('ci', 'runners'), forwarded({ targets: ['a'] }))).status,
    ).toBe(403);
    const denied2 = sar(false);
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
    const others = [frontProxyConfigMap(), sar(true)];
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
    const others = [frontProxyConfigMap(), sar(true)];
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
    const others = [frontProxyConfigMap(), sar(true)];
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
    const others = [frontProxyConfigMap(), sar(true)];
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
    const others = [frontProxyConfigMap(), sar(true)];
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
    const others = [frontProxyConfigMap(), sar(true)];
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
    const others = [frontProxyConfigMap(), sar(true)];
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
    const others = [frontProxyConfigMap(), sar(true)];
    const res = await build().request(scaleDownPath('ci', 'runners'), forwarded('{"targets": ['));
    expect(res.status).toBe(400);
    expect((await statusOf(res)).message).toContain('expected VirtualMachinePoolScaleDownWith');
    for (const o of others) o.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a body of the wrong shape → 400', async () => {
    const others = [frontProxyConfigMap(), sar(true)];
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
    const seen: SarBody[] = [];
    const scope = nock(API).get(poolPath('ci', 'runners')).reply(200, explicitPool());
    const others = [frontProxyConfigMap(), sar(true, seen)];
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

describe('scale-down-with: the CloudEvent path', () => {
  const event = (data: unknown): RequestInit => binaryEvent(SCALE_DOWN_WITH_EVENT, data);

  /** The calls of a request that removes `runners-aaaaa` from `p`; `written()` is the pool PUT. */
  function removesOne(p: VirtualMachinePool) {
    let written: VirtualMachinePool | undefined;
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(200, vm(p, 'runners-aaaaa'))
      .put(poolPath('ci', 'runners'), (body: VirtualMachinePool) => {
        written = body;
        return true;
      })
      .query(true)
      .reply(200, (_uri, body) => body as object);
    return { scope, written: () => written };
  }

  /** The reads of a request naming `runners-aaaaa` once the replica is gone. */
  const targetGone = (p: VirtualMachinePool | undefined) =>
    nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(404, statusBody(404, 'NotFound'));

  it('success → 202 with an empty body', async () => {
    const { scope, written } = removesOne(explicitPool());
    const res = await build('none').request(
      '/',
      event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    expect(written()?.spec.replicas).toBe(2);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a redelivery (same source and id) after the target is gone → 202, no second PUT', async () => {
    const first = removesOne(explicitPool());
    const init = event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] });
    const app = build('none');
    expect((await app.request('/', init)).status).toBe(202);
    first.scope.done();
    const written = first.written();
    const key = requestKey('https://10.96.0.1:443', new Headers(init.headers).get('ce-id')!);
    expect(written?.metadata.annotations?.[keys.scaleDownRequests]).toBe(key);
    // The reconcile removed the replica since; the pool remembers the request.
    const second = targetGone(written);
    const res = await app.request('/', init);
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    second.done();
    expect(unmatched.seen).toEqual([]);
    // A new event naming the vanished replica is still refused.
    const third = targetGone(written);
    const again = event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] });
    expect((await app.request('/', again)).status).toBe(400);
    third.done();
  });

  it('a refused request (non-member) → 400, no PUT', async () => {
    const p = explicitPool();
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'other-zzzzz'))
      .reply(200, vm(pool({ name: 'other', uid: 'pool-uid-2' }), 'other-zzzzz'));
    const res = await build('none').request(
      '/',
      event({ namespace: 'ci', pool: 'runners', targets: ['other-zzzzz'] }),
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe(
      'target VirtualMachine "other-zzzzz" does not belong to VirtualMachinePool "runners"',
    );
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a pool that is already gone → 204, not a dead letter', async () => {
    const scope = nock(API).get(poolPath('ci', 'ghost')).reply(404, statusBody(404, 'NotFound'));
    const res = await build('none').request(
      '/',
      event({ namespace: 'ci', pool: 'ghost', targets: ['ghost-aaaaa'] }),
    );
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('an empty target list → 400 without an API call', async () => {
    const res = await build('none').request(
      '/',
      event({ namespace: 'ci', pool: 'runners', targets: [] }),
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe(
      'scaleDownWith requires a non-empty targets list',
    );
    expect(unmatched.seen).toEqual([]);
  });

  it('conflicts on every attempt → 503 with Retry-After', async () => {
    const p = explicitPool();
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .times(5)
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .times(5)
      .reply(200, vm(p, 'runners-aaaaa'))
      .put(poolPath('ci', 'runners'))
      .query(true)
      .times(5)
      .reply(409, statusBody(409, 'Conflict'));
    const res = await build('none').request(
      '/',
      event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).not.toBeNull();
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('another event type → 400', async () => {
    const res = await build('none').request('/', binaryEvent('dev.knative.sources.ping'));
    expect(res.status).toBe(400);
    expect(unmatched.seen).toEqual([]);
  });

  it('data without a pool → 400', async () => {
    const res = await build('none').request('/', event({ namespace: 'ci', targets: ['a'] }));
    expect(res.status).toBe(400);
    expect(unmatched.seen).toEqual([]);
  });
  it('does not serve the unauthenticated CloudEvent path unless enabled', async () => {
    const app = buildScaleDownApp({ kube: testKube(), log: testLog('test') });
    const res = await app.request('/', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'ce-specversion': '1.0',
        'ce-id': 'x',
        'ce-type': SCALE_DOWN_WITH_EVENT,
        'ce-source': 'test',
      },
      body: JSON.stringify({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] }),
    });
    expect(res.status).toBe(404);
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
      resources: [{ name: 'virtualmachinepools/scaledownwith', verbs: ['create'] }],
    });
    expect((await app.request(SUB_BASE)).status).toBe(404);
  });

  it('routes scaledownwith under it and authorizes callers in it', async () => {
    frontProxyConfigMap();
    const seen: SarBody[] = [];
    sar(false, seen);
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
