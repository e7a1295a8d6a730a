import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import nock from 'nock';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VirtualMachine, VirtualMachinePool } from '../api/index.js';
import { withCallBudget } from './budget.js';
import { createKube, lastContinue } from './client.js';
import type { KubeOptions } from './client.js';
import { kubeConfigFor } from './config.js';

const API = 'https://k8s.test';
const BASE = '/apis/virtualization.deckhouse.io/v1alpha2';

function pool(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'virtualization.deckhouse.io/v1alpha2',
    kind: 'VirtualMachinePool',
    metadata: { name: 'p1', namespace: 'ns', uid: 'u-p1', resourceVersion: '10' },
    spec: {
      replicas: 2,
      scaleDownPolicy: 'NewestFirst',
      virtualMachineTemplate: {
        spec: { blockDeviceRefs: [{ kind: 'VirtualDisk', name: 'root' }], futureField: { a: 1 } },
      },
      virtualDiskTemplates: [{ name: 'root', spec: { persistentVolumeClaim: { size: '10Gi' } } }],
      unknownSpecField: 'keep me',
    },
    status: { replicas: 2, unknownStatusField: [1, 2] },
    ...extra,
  };
}

function vm(name: string, rv = '5'): Record<string, unknown> {
  return {
    apiVersion: 'virtualization.deckhouse.io/v1alpha2',
    kind: 'VirtualMachine',
    metadata: { name, namespace: 'ns', uid: `u-${name}`, resourceVersion: rv },
    spec: { runPolicy: 'AlwaysOn', cpu: { cores: 2 } },
  };
}

/** The metadata of a VM that does not parse: what a list still reports of it. */
const BAD_METADATA = {
  name: 'bad',
  namespace: 'ns',
  uid: 'u-bad',
  resourceVersion: '7',
  labels: { 'vmpool.virtualization.deckhouse.io/pool-uid': 'u-p1' },
};

function status(code: number, reason: string, message = reason): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}

const sleeps: number[] = [];

function kube(opts: KubeOptions = {}) {
  sleeps.length = 0;
  return createKube(kubeConfigFor(), {
    reportingInstance: 'vmpool-test',
    random: () => 0.5,
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    ...opts,
  });
}

beforeAll(() => {
  nock.disableNetConnect();
});
afterEach(() => {
  nock.cleanAll();
});

describe('reads', () => {
  it('getPool parses with the model and keeps unknown fields', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .matchHeader('authorization', 'Bearer test-token')
      .reply(200, pool());
    const k = kube();
    const r = await k.getPool('ns', 'p1');
    scope.done();
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.spec.replicas).toBe(2);
    expect(r.value.spec).toHaveProperty('unknownSpecField', 'keep me');
    expect(r.value.status).toHaveProperty('unknownStatusField', [1, 2]);
    expect(k.counts()).toEqual({ get: 1, 'get:ok': 1 });
  });

  it('getPool with a resourceVersion asks for the cached pool no older than it', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .query({ resourceVersion: '4711' })
      .reply(200, pool());
    const r = await kube().getPool('ns', 'p1', '4711');
    scope.done();
    expect(r.ok).toBe(true);
  });

  it('lists namespaced VMs with a label selector and no resourceVersion (quorum read)', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachines`)
      .query((q) => {
        expect(q).toEqual({ labelSelector: 'a=b,c in (d)', limit: '500' });
        return true;
      })
      .reply(200, { items: [vm('p1-aaaaa'), vm('p1-bbbbb')], metadata: {} });
    const r = await kube().listVms('ns', 'a=b,c in (d)');
    scope.done();
    expect(r.ok && r.value.map((v) => v.metadata.name)).toEqual(['p1-aaaaa', 'p1-bbbbb']);
  });

  it('lists cluster-wide and follows continue tokens', async () => {
    const scope = nock(API)
      .get(`${BASE}/virtualmachinepools`)
      .query({ limit: '2' })
      .reply(200, { items: [pool(), pool()], metadata: { continue: 'tok' } })
      .get(`${BASE}/virtualmachinepools`)
      .query({ limit: '2', continue: 'tok' })
      .reply(200, { items: [pool()], metadata: { continue: '' } });
    const k = kube({ pageSize: 2 });
    const r = await k.listPools();
    scope.done();
    expect(r.ok && r.value.length).toBe(3);
    expect(k.counts()).toEqual({ list: 2, 'list:ok': 2 });
  });

  it('lists one page when asked, with the token that continues it', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools`)
      .query({ limit: '3' })
      .reply(200, { items: [pool(), pool(), pool()], metadata: { continue: 'tok' } })
      .get(`${BASE}/namespaces/ns/virtualmachinepools`)
      .query({ limit: '3', continue: 'tok' })
      .reply(200, { items: [pool()], metadata: { continue: '' } });
    const k = kube({ pageSize: 2 });
    const first = await k.listPools('ns', { limit: 3 });
    expect(first.ok && [first.value.length, first.next]).toEqual([3, 'tok']);
    const last = await k.listPools('ns', { limit: 3, continue: 'tok' });
    scope.done();
    expect(last.ok && [last.value.length, 'next' in last]).toEqual([1, false]);
    expect(k.counts()).toEqual({ list: 2, 'list:ok': 2 });
  });
  it('parses a lean page without its managedFields, and keeps them otherwise', async () => {
    const fields = [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } }];
    const withFields = pool({
      metadata: { ...(pool().metadata as object), managedFields: fields },
    });
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools`)
      .query({ limit: '2' })
      .times(2)
      .reply(200, { items: [withFields], metadata: { continue: '' } });
    const k = kube();
    const lean = await k.listPools('ns', { limit: 2, lean: true });
    const whole = await k.listPools('ns', { limit: 2 });
    scope.done();
    expect(lean.ok && lean.value[0]?.metadata).toEqual(pool().metadata);
    expect(lean.ok && lean.value[0]?.spec).toMatchObject({ unknownSpecField: 'keep me' });
    expect(whole.ok && whole.value[0]?.metadata).toMatchObject({ managedFields: fields });
  });

  it('reports an item that does not parse on a lean page as on any other, with what it claims', async () => {
    const fields = [{ manager: 'm', operation: 'Update', fieldsV1: { 'f:spec': {} } }];
    const bad = {
      metadata: { ...BAD_METADATA, managedFields: fields },
      spec: { blockDeviceRefs: 'not a list' },
    };
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachines`)
      .query(true)
      .reply(200, {
        items: [{ ...vm('ok'), metadata: { name: 'ok', managedFields: fields } }, bad],
      });
    const r = await kube().listVms('ns', '', { lean: true });
    scope.done();
    expect(r.ok && r.value.map((v) => v.metadata)).toEqual([{ name: 'ok' }]);
    expect(r.ok && r.malformed).toMatchObject([
      {
        name: 'bad',
        uid: 'u-bad',
        labels: { 'vmpool.virtualization.deckhouse.io/pool-uid': 'u-p1' },
      },
    ]);
  });

  it('reads every page in pages of the limit asked for when the request says all', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualdisks`)
      .query({ labelSelector: 'x=y', limit: '3' })
      .reply(200, {
        items: [1, 2, 3].map((i) => ({ metadata: { name: `d${i}` }, spec: {} })),
        metadata: { continue: 'tok' },
      })
      .get(`${BASE}/namespaces/ns/virtualdisks`)
      .query({ labelSelector: 'x=y', limit: '3', continue: 'tok' })
      .reply(200, { items: [], metadata: { continue: '' } });
    const r = await kube().listDisks('ns', 'x=y', { limit: 3, all: true });
    scope.done();
    // The whole list, no token left to continue: the page that filled its limit exactly was
    // followed by the empty one the server answers after it.
    expect(r.ok && [r.value.map((d) => d.metadata.name), 'next' in r]).toEqual([
      ['d1', 'd2', 'd3'],
      false,
    ]);
  });

  it("gives a page's continue token to `ahead` before its items are parsed, and not when it reads all", async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualdisks`)
      .query({ labelSelector: 'x=y', limit: '2' })
      .times(2)
      .reply(200, {
        items: [1, 2].map((i) => ({ metadata: { name: `d${i}` }, spec: {} })),
        metadata: { continue: 'tok' },
      })
      .get(`${BASE}/namespaces/ns/virtualdisks`)
      .query({ labelSelector: 'x=y', limit: '2', continue: 'tok' })
      .reply(200, { items: [], metadata: { continue: '' } });
    const tokens: string[] = [];
    let settled = false;
    const r = kube().listDisks('ns', 'x=y', {
      limit: 2,
      ahead: (t) => {
        // Called while the list is still under way: its answer is not given yet.
        tokens.push(`${t}:${String(settled)}`);
      },
    });
    void r.then(() => (settled = true));
    const page = await r;
    expect(page.ok && page.next).toBe('tok');
    // From the body's tail before it is parsed, then the parsed token: both before the answer.
    expect(tokens).toEqual(['tok:false', 'tok:false']);
    const all: string[] = [];
    await kube().listDisks('ns', 'x=y', { limit: 2, all: true, ahead: (t) => all.push(t) });
    scope.done();
    expect(all).toEqual([]);
  });

  it('listDisks in a namespace', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualdisks`)
      .query({ labelSelector: 'x=y', limit: '500' })
      .reply(200, { items: [{ metadata: { name: 'd1' }, spec: {} }] });
    const r = await kube().listDisks('ns', 'x=y');
    scope.done();
    expect(r.ok && r.value[0]?.metadata.name).toBe('d1');
  });

  it('getVm maps 404 to notFound with the server message', async () => {
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachines/gone`)
      .reply(404, status(404, 'NotFound', 'virtualmachines "gone" not found'));
    const k = kube();
    const r = await k.getVm('ns', 'gone');
    expect(r).toEqual({
      ok: false,
      reason: 'notFound',
      code: 404,
      message: 'virtualmachines "gone" not found',
    });
    expect(k.counts()).toEqual({ get: 1, 'get:notFound': 1 });
  });

  it('a response the model rejects is invalid, with a clear message', async () => {
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .reply(200, { metadata: { name: 'p1' }, spec: { scaleDownPolicy: 'Sideways' } });
    const r = await kube().getPool('ns', 'p1');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toBe('invalid');
    expect(r.code).toBe(0);
    expect(r.message).toMatch(/malformed virtualmachinepool at spec\./);
  });

  it('a list skips an item that does not parse, names it, and reports it once per version', async () => {
    const bad = {
      ...vm('bad', '7'),
      metadata: {
        ...BAD_METADATA,
        ownerReferences: [
          {
            apiVersion: 'v',
            kind: 'VirtualMachinePool',
            name: 'p1',
            uid: 'u-p1',
            controller: true,
          },
          { kind: 'broken' },
        ],
      },
      spec: { runPolicy: 'SomeFutureMode' },
    };
    // The same object on two pages of two lists; the second list also has one with no metadata.
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachines`)
      .query((q) => q.continue === undefined)
      .reply(200, { metadata: { continue: 'c1' }, items: [vm('ok'), bad] })
      .get(`${BASE}/namespaces/ns/virtualmachines`)
      .query((q) => q.continue === 'c1')
      .reply(200, { items: [vm('ok2')] })
      .get(`${BASE}/namespaces/ns/virtualmachines`)
      .query(true)
      .reply(200, { items: [bad, { metadata: 'nope' }] });
    const seen: string[] = [];
    const k = kube({ onMalformed: (m) => seen.push(`${m.name}: ${m.issue}`) });
    const r = await k.listVms('ns', 'a=b');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.map((v) => v.metadata.name)).toEqual(['ok', 'ok2']);
    expect(r.malformed).toMatchObject([
      {
        kind: 'VirtualMachine',
        name: 'bad',
        namespace: 'ns',
        uid: 'u-bad',
        resourceVersion: '7',
        labels: { 'vmpool.virtualization.deckhouse.io/pool-uid': 'u-p1' },
        ownerReferences: [
          {
            apiVersion: 'v',
            kind: 'VirtualMachinePool',
            name: 'p1',
            uid: 'u-p1',
            controller: true,
          },
        ],
      },
    ]);
    expect(r.malformed?.[0]?.issue).toMatch(/^metadata\.ownerReferences\.1\.apiVersion: /);
    const again = await k.listVms('ns', 'a=b');
    expect(again.ok && again.value).toEqual([]);
    expect(again.ok && again.malformed?.map((m) => m.name)).toEqual(['bad', '']);
    // Logged once for the object however many lists return it; the nameless one once too.
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatch(/^bad: metadata\.ownerReferences\.1/);
    expect(seen[1]).toMatch(/^: metadata: /);
  });

  it('a list whose body has no items array fails as a whole', async () => {
    nock(API).get(`${BASE}/namespaces/ns/virtualmachines`).query(true).reply(200, { items: 3 });
    const r = await kube().listVms('ns', 'a=b');
    expect(!r.ok && r.reason).toBe('invalid');
  });

  it('getConfigMapData returns the data map', async () => {
    nock(API)
      .get('/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication')
      .reply(200, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'extension-apiserver-authentication' },
        data: { 'requestheader-client-ca-file': 'PEM' },
      });
    const r = await kube().getConfigMapData('kube-system', 'extension-apiserver-authentication');
    expect(r).toEqual({ ok: true, value: { 'requestheader-client-ca-file': 'PEM' } });
  });
});

describe('outcome mapping', () => {
  it.each([
    [404, 'NotFound', 'notFound'],
    [403, 'Forbidden', 'forbidden'],
    [409, 'AlreadyExists', 'alreadyExists'],
    [409, 'Conflict', 'conflict'],
    [422, 'Invalid', 'invalid'],
    [400, 'BadRequest', 'invalid'],
    [429, 'TooManyRequests', 'transient'],
    [500, 'InternalError', 'transient'],
    [503, 'ServiceUnavailable', 'transient'],
    [504, 'Timeout', 'transient'],
  ] as const)('HTTP %i %s → %s', async (code, reason, expected) => {
    nock(API)
      .post(`${BASE}/namespaces/ns/virtualmachines`)
      .query(true)
      .times(3)
      .reply(code, status(code, reason, `msg ${reason}`));
    const r = await kube().createVm('ns', VirtualMachine.parse(vm('v1')));
    expect(r).toEqual({ ok: false, reason: expected, code, message: `msg ${reason}` });
  });

  it('a 401 without a body still maps to forbidden', async () => {
    nock(API).get(`${BASE}/namespaces/ns/virtualmachines/v`).reply(401);
    const r = await kube().getVm('ns', 'v');
    expect(r).toEqual({ ok: false, reason: 'forbidden', code: 401, message: 'HTTP 401' });
  });

  it('network errors are transient and retried', async () => {
    // A real refused connection, as the network would refuse it.
    nock.enableNetConnect('127.0.0.1');
    sleeps.length = 0;
    const k = createKube(kubeConfigFor({ server: 'https://127.0.0.1:1' }), {
      sleep: (ms) => {
        sleeps.push(ms);
        return Promise.resolve();
      },
    });
    const r = await k.getVm('ns', 'v');
    nock.disableNetConnect();
    expect(sleeps).toHaveLength(2);
    expect(!r.ok && [r.reason, r.code]).toEqual(['transient', 0]);
    expect(k.counts()).toEqual({ get: 3, 'get:transient': 3 });
  });

  it('a request that exceeds the timeout is transient', async () => {
    nock(API).get(`${BASE}/namespaces/ns/virtualmachines/slow`).delay(300).reply(200, vm('slow'));
    const r = await kube({ timeoutMs: 50, retry: { attempts: 1 } }).getVm('ns', 'slow');
    expect(!r.ok && r.reason).toBe('transient');
  });
});

describe('retries', () => {
  it('retries 503 then succeeds, with jittered backoff in 50..400 ms', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .twice()
      .reply(503, status(503, 'ServiceUnavailable'))
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .reply(200, pool());
    const k = kube();
    const r = await k.getPool('ns', 'p1');
    scope.done();
    expect(r.ok).toBe(true);
    expect(sleeps).toEqual([50, 50]);
    expect(k.counts()).toEqual({ get: 3, 'get:transient': 2, 'get:ok': 1 });
  });

  it('jitter grows with the attempt and stays within the cap', async () => {
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .times(5)
      .reply(500, status(500, 'InternalError'));
    await kube({ random: () => 0.99, retry: { attempts: 5 } }).getPool('ns', 'p1');
    expect(sleeps).toEqual([50, 99, 198, 396]);
  });

  it('honours Retry-After on 429, capped at 2 s', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .reply(429, status(429, 'TooManyRequests'), { 'Retry-After': '1' })
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .reply(429, status(429, 'TooManyRequests'), { 'Retry-After': '30' })
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .reply(200, pool());
    const r = await kube().getPool('ns', 'p1');
    scope.done();
    expect(r.ok).toBe(true);
    expect(sleeps).toEqual([1000, 2000]);
  });

  it('never retries a conflict', async () => {
    const scope = nock(API)
      .put(`${BASE}/namespaces/ns/virtualmachines/v1`)
      .query(true)
      .reply(409, status(409, 'Conflict', 'the object has been modified'));
    const k = kube();
    const r = await k.updateVm(VirtualMachine.parse(vm('v1')));
    scope.done();
    expect(!r.ok && r.reason).toBe('conflict');
    expect(sleeps).toEqual([]);
    expect(k.counts()).toEqual({ update: 1, 'update:conflict': 1 });
  });

  it('a retried create that had landed reports alreadyExists', async () => {
    nock(API)
      .post(`${BASE}/namespaces/ns/virtualmachines`)
      .query(true)
      .reply(504, status(504, 'Timeout'))
      .post(`${BASE}/namespaces/ns/virtualmachines`)
      .query(true)
      .reply(409, status(409, 'AlreadyExists'));
    const k = kube();
    const r = await k.createVm('ns', VirtualMachine.parse(vm('v1')));
    expect(!r.ok && r.reason).toBe('alreadyExists');
    expect(k.counts()).toEqual({ create: 2, 'create:transient': 1, 'create:alreadyExists': 1 });
  });
});

describe('the budget of a request', () => {
  it('a slow API server: each call times out within the budget and no retry outlives it', async () => {
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .times(5)
      .delay(5_000)
      .reply(200, pool());
    // Real sleeps: the deadline is measured in real time.
    const k = createKube(kubeConfigFor(), { reportingInstance: 't', retry: { attempts: 5 } });
    const t0 = performance.now();
    const r = await withCallBudget({ totalMs: 600, timeoutMs: 250 }, () => k.getPool('ns', 'p1'));
    const took = performance.now() - t0;
    expect(took).toBeLessThan(900);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toBe('transient');
    expect(!r.ok && r.message).toMatch(/^the API server did not answer within 600 ms/);
    expect(k.counts().get).toBeLessThanOrEqual(3);
  });

  it('a call times out beside the caller signal even after a garbage collection', async () => {
    // Node 20 lets AbortSignal.timeout's signal be collected once only AbortSignal.any refers to
    // it: the timeout then never fired, and the call hung until the caller left.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    nock(API).get(`${BASE}/namespaces/ns/virtualmachinepools/p1`).delay(5_000).reply(200, pool());
    const k = kube();
    const caller = new AbortController();
    const t0 = performance.now();
    const collect = [setTimeout(gc, 30), setTimeout(gc, 80)];
    const r = await withCallBudget({ signal: caller.signal, timeoutMs: 300, attempts: 1 }, () =>
      k.getPool('ns', 'p1'),
    );
    collect.forEach(clearTimeout);
    expect(performance.now() - t0).toBeLessThan(2_000);
    expect(!r.ok && r.reason).toBe('transient');
    expect(caller.signal.aborted).toBe(false);
  });

  it('fewer attempts than the policy', async () => {
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .times(3)
      .reply(503, status(503, 'ServiceUnavailable'));
    const k = kube();
    await withCallBudget({ attempts: 1 }, () => k.getPool('ns', 'p1'));
    expect(k.counts().get).toBe(1);
  });

  it('an aborted signal cancels the call in flight and sends nothing more', async () => {
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .delay(5_000)
      .reply(200, pool())
      .get(`${BASE}/namespaces/ns/virtualmachines/v1`)
      .reply(200, vm('v1'));
    const k = kube();
    const gone = new AbortController();
    const t0 = performance.now();
    const [p, v] = await withCallBudget({ signal: gone.signal }, async () => {
      const first = k.getPool('ns', 'p1');
      setTimeout(() => {
        gone.abort();
      }, 50);
      const p1 = await first;
      return [p1, await k.getVm('ns', 'v1')] as const;
    });
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(!p.ok && p.message).toMatch(/^the request was cancelled/);
    expect(!v.ok && v.message).toBe('the request was cancelled');
    // One request went out (and was cut); the second never left.
    expect(k.counts()).toEqual({ get: 1, 'get:transient': 1 });
  });

  it('budgets nest: the inner one cannot extend the outer', async () => {
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .times(3)
      .reply(503, status(503, 'ServiceUnavailable'));
    const k = kube();
    await withCallBudget({ attempts: 2 }, () =>
      withCallBudget({ attempts: 5 }, () => k.getPool('ns', 'p1')),
    );
    expect(k.counts().get).toBe(2);
  });
});

describe('writes', () => {
  it('createVm POSTs the object with apiVersion/kind filled in and fieldManager', async () => {
    const body = VirtualMachine.parse({
      metadata: { name: 'p1-abcde' },
      spec: { cpu: { cores: 1 } },
    });
    const scope = nock(API)
      .post(`${BASE}/namespaces/ns/virtualmachines`, (b: Record<string, unknown>) => {
        expect(b).toEqual({
          apiVersion: 'virtualization.deckhouse.io/v1alpha2',
          kind: 'VirtualMachine',
          metadata: { name: 'p1-abcde' },
          spec: { cpu: { cores: 1 } },
        });
        return true;
      })
      .query({ fieldManager: 'vmpool' })
      .reply(201, vm('p1-abcde', '1'));
    const k = kube();
    const r = await k.createVm('ns', body);
    scope.done();
    expect(r.ok && r.value.metadata.uid).toBe('u-p1-abcde');
    expect(k.counts()).toEqual({ create: 1, 'create:ok': 1 });
  });

  it('createDisk POSTs to virtualdisks', async () => {
    const scope = nock(API)
      .post(
        `${BASE}/namespaces/ns/virtualdisks`,
        (b: { kind?: string }) => b.kind === 'VirtualDisk',
      )
      .query(true)
      .reply(201, { metadata: { name: 'd1', uid: 'u-d1' }, spec: {} });
    const r = await kube().createDisk('ns', { metadata: { name: 'd1' }, spec: {} });
    scope.done();
    expect(r.ok).toBe(true);
  });

  it('dryRunCreateVm sends dryRun=All; a refusal is invalid', async () => {
    const scope = nock(API)
      .post(`${BASE}/namespaces/ns/virtualmachines`)
      .query({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' })
      .reply(422, status(422, 'Invalid', 'spec.cpu.cores: Invalid value'));
    const k = kube();
    const r = await k.dryRunCreateVm('ns', VirtualMachine.parse(vm('x')));
    scope.done();
    expect(r).toEqual({
      ok: false,
      reason: 'invalid',
      code: 422,
      message: 'spec.cpu.cores: Invalid value',
    });
    expect(k.counts()).toEqual({ dryRun: 1, 'dryRun:invalid': 1 });
  });

  it('dryRunCreateVm asks to be warned of unknown fields and returns the warnings', async () => {
    const scope = nock(API)
      .post(`${BASE}/namespaces/ns/virtualmachines`)
      .query({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' })
      .reply(201, vm('x'), {
        Warning: ['299 - "unknown field \\"spec.cpus\\""', '299 - "duplicate field \\"a\\""'],
      });
    const r = await kube().dryRunCreateVm('ns', VirtualMachine.parse(vm('x')));
    scope.done();
    expect(r.ok && r.value.warnings).toEqual(['unknown field "spec.cpus"', 'duplicate field "a"']);
  });

  it('updates are PUTs carrying metadata.resourceVersion', async () => {
    const scope = nock(API)
      .put(
        `${BASE}/namespaces/ns/virtualdisks/d1`,
        (b: { metadata: { resourceVersion?: string } }) => {
          expect(b.metadata.resourceVersion).toBe('7');
          return true;
        },
      )
      .query({ fieldManager: 'vmpool' })
      .reply(200, { metadata: { name: 'd1', namespace: 'ns', resourceVersion: '8' }, spec: {} });
    const r = await kube().updateDisk({
      metadata: { name: 'd1', namespace: 'ns', resourceVersion: '7' },
      spec: {},
    });
    scope.done();
    expect(r.ok && r.value.metadata.resourceVersion).toBe('8');
  });

  it('refuses an update without resourceVersion instead of writing blindly', async () => {
    const k = kube();
    const r = await k.updateVm(VirtualMachine.parse({ metadata: { name: 'v', namespace: 'ns' } }));
    expect(!r.ok && r.reason).toBe('invalid');
    expect(k.counts()).toEqual({});
  });

  it('get → update round trip keeps every unknown field (main resource)', async () => {
    let sent: unknown;
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachinepools/p1`)
      .reply(200, pool({ extraTop: { x: 1 } }))
      .put(`${BASE}/namespaces/ns/virtualmachinepools/p1`, (b: unknown) => {
        sent = b;
        return true;
      })
      .query(true)
      .reply(200, pool({ extraTop: { x: 1 } }));
    const k = kube();
    const got = await k.getPool('ns', 'p1');
    if (!got.ok) throw new Error(got.message);
    const changed = { ...got.value, spec: { ...got.value.spec, replicas: 3 } };
    const r = await k.updatePool(changed);
    expect(r.ok).toBe(true);
    const expected = pool({ extraTop: { x: 1 } });
    const spec = expected.spec as Record<string, unknown>;
    expect(sent).toMatchObject({ ...expected, spec: { ...spec, replicas: 3 } });
    expect(sent).toHaveProperty('spec.virtualMachineTemplate.spec.futureField', { a: 1 });
  });

  it('updatePoolStatus PUTs the /status subresource conditioned on resourceVersion', async () => {
    const p = VirtualMachinePool.parse(pool());
    const scope = nock(API)
      .put(
        `${BASE}/namespaces/ns/virtualmachinepools/p1/status`,
        (b: { metadata: { resourceVersion: string }; status: Record<string, unknown> }) =>
          b.metadata.resourceVersion === '10' && b.status.unknownStatusField !== undefined,
      )
      .query(true)
      .reply(409, status(409, 'Conflict'));
    const k = kube();
    const r = await k.updatePoolStatus(p);
    scope.done();
    expect(!r.ok && r.reason).toBe('conflict');
    expect(k.counts()).toEqual({ updateStatus: 1, 'updateStatus:conflict': 1 });
  });

  it('deletes carry uid and resourceVersion preconditions and Background propagation in the body', async () => {
    const scope = nock(API)
      .delete(`${BASE}/namespaces/ns/virtualdisks/d1`, {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: 'Background',
        preconditions: { uid: 'u-d1', resourceVersion: '42' },
      })
      .query({ propagationPolicy: 'Background' })
      .reply(200, status(200, ''));
    const k = kube();
    const r = await k.deleteDisk('ns', 'd1', { uid: 'u-d1', resourceVersion: '42' });
    scope.done();
    expect(r).toEqual({ ok: true, value: undefined });
    expect(k.counts()).toEqual({ delete: 1, 'delete:ok': 1 });
  });

  it('deleteVm with a uid-only precondition; a precondition failure is a conflict', async () => {
    const scope = nock(API)
      .delete(`${BASE}/namespaces/ns/virtualmachines/v1`, {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: 'Background',
        preconditions: { uid: 'u-old' },
      })
      .query(true)
      .reply(409, status(409, 'Conflict', 'Precondition failed: UID in precondition: u-old'));
    const r = await kube().deleteVm('ns', 'v1', { uid: 'u-old' });
    scope.done();
    expect(!r.ok && r.reason).toBe('conflict');
  });
});

describe('events and access reviews', () => {
  it('recordEvent creates an events.k8s.io/v1 Event with a microsecond eventTime', async () => {
    let sent: Record<string, unknown> = {};
    const scope = nock(API)
      .post('/apis/events.k8s.io/v1/namespaces/ns/events', (b: Record<string, unknown>) => {
        sent = b;
        return true;
      })
      .reply(201, {});
    const k = kube();
    const r = await k.recordEvent(VirtualMachinePool.parse(pool()), {
      type: 'Normal',
      reason: 'SuccessfulCreate',
      note: 'Created VM p1-abcde',
      action: 'Create',
    });
    scope.done();
    expect(r.ok).toBe(true);
    expect(sent).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { namespace: 'ns' },
      reportingController: 'vmpool',
      reportingInstance: 'vmpool-test',
      action: 'Create',
      reason: 'SuccessfulCreate',
      note: 'Created VM p1-abcde',
      type: 'Normal',
      regarding: {
        apiVersion: 'virtualization.deckhouse.io/v1alpha2',
        kind: 'VirtualMachinePool',
        name: 'p1',
        namespace: 'ns',
        uid: 'u-p1',
      },
    });
    expect(sent.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect((sent.metadata as { name: string }).name).toMatch(/^p1\.[0-9a-f]+$/);
    expect(k.counts()).toEqual({ event: 1, 'event:ok': 1 });
  });

  it('recordEvent is best effort: one attempt, failure as a value', async () => {
    nock(API)
      .post('/apis/events.k8s.io/v1/namespaces/ns/events')
      .reply(503, status(503, 'ServiceUnavailable'));
    const k = kube();
    const r = await k.recordEvent(VirtualMachinePool.parse(pool()), {
      type: 'Warning',
      reason: 'Failed',
      note: 'x'.repeat(5000),
      action: 'Create',
    });
    expect(!r.ok && r.reason).toBe('transient');
    expect(k.counts()).toEqual({ event: 1, 'event:transient': 1 });
  });

  it('subjectAccessReview sends the question and returns the decision', async () => {
    const scope = nock(API)
      .post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: 'alice',
          groups: ['dev'],
          extra: { scopes: ['a'] },
          resourceAttributes: {
            namespace: 'ns',
            group: 'subresources.virtualization.deckhouse.io',
            resource: 'virtualmachinepools',
            subresource: 'scaledownwith',
            name: 'p1',
            verb: 'create',
          },
        },
      })
      .reply(201, { spec: {}, status: { allowed: false, reason: 'no RBAC rule' } });
    const k = kube();
    const r = await k.subjectAccessReview({
      user: 'alice',
      groups: ['dev'],
      extra: { scopes: ['a'] },
      namespace: 'ns',
      group: 'subresources.virtualization.deckhouse.io',
      resource: 'virtualmachinepools',
      subresource: 'scaledownwith',
      name: 'p1',
      verb: 'create',
    });
    scope.done();
    expect(r).toEqual({ ok: true, value: { allowed: false, reason: 'no RBAC rule' } });
    expect(k.counts()).toEqual({ sar: 1, 'sar:ok': 1 });
  });
});

describe('onRequest hook', () => {
  it('reports every request with verb, outcome and duration', async () => {
    const seen: string[] = [];
    nock(API)
      .get(`${BASE}/namespaces/ns/virtualmachines/v`)
      .reply(503, status(503, 'ServiceUnavailable'))
      .get(`${BASE}/namespaces/ns/virtualmachines/v`)
      .reply(200, vm('v'));
    await kube({
      onRequest: (verb, outcome, seconds) => {
        expect(seconds).toBeGreaterThanOrEqual(0);
        seen.push(`${verb}:${outcome}`);
      },
    }).getVm('ns', 'v');
    expect(seen).toEqual(['get:transient', 'get:ok']);
  });
});

describe('lastContinue', () => {
  it("reads the last continue token of a list body's tail, and nothing from a quoted string", () => {
    const body = (meta: string) =>
      `{"apiVersion":"v1","items":[{"spec":{"note":"\\"continue\\":\\"fake\\""}}],"kind":"List","metadata":${meta}}`;
    expect(lastContinue(body('{"continue":"eyJ2IjoxfQ","resourceVersion":"5"}'))).toBe(
      'eyJ2IjoxfQ',
    );
    expect(lastContinue(body('{"resourceVersion":"5"}'))).toBeUndefined();
    // An item field named continue comes before the list's own.
    expect(
      lastContinue('{"items":[{"spec":{"continue":"x"}}],"metadata":{"continue":"real"}}'),
    ).toBe('real');
    // Far from the tail, a token is not looked for.
    expect(lastContinue(`{"metadata":{"continue":"head"},"items":["${'x'.repeat(5000)}"]}`)).toBe(
      undefined,
    );
  });
});
