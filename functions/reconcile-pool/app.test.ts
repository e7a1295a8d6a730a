import nock from 'nock';
import { describe, expect, it, vi } from 'vitest';
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../../shared/api/index.js';
import { keys } from '../../shared/api/index.js';
import { createFunctionMetrics } from '../../shared/http/index.js';
import type { PoolEventBody } from '../../shared/kube/event.js';
import {
  API,
  BASE,
  binaryEvent,
  converged,
  eventsPath,
  failingList,
  guardNock,
  noClaims,
  list,
  ref,
  statusBody,
  structuredEvent,
  testKube,
} from '../../test/functions/fixtures.js';
import { NOW, disk, pool, seededRandom, vm } from '../../test/unit/builders.js';
import { claim } from '../../test/unit/claim-builders.js';
import { plan } from '../../shared/domain/index.js';
import { buildReconcileApp } from './app.js';
import { WINDOW, WINDOW_PAGE, ownWrites } from '../../shared/reconcile/index.js';
import type { OwnWrites } from '../../shared/reconcile/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { testLog } from '../../test/logs.js';

const RES = 'dev.knative.apiserver.resource.';
const REF = 'dev.knative.apiserver.ref.';
const PING = 'dev.knative.sources.ping';
const VM_API = 'virtualization.deckhouse.io/v1alpha2';

const poolPath = (ns: string, name: string): string =>
  `${BASE}/namespaces/${ns}/virtualmachinepools/${name}`;

function build(rand: () => number = () => 0, writes?: OwnWrites) {
  const metrics = createFunctionMetrics();
  const app = buildReconcileApp({
    kube: testKube(),
    log: testLog('test'),
    metrics,
    now: () => NOW,
    rand,
    ...(writes === undefined ? {} : { ownWrites: writes }),
  });
  return { app, metrics };
}

/** Parses a body nock hands to a reply function (decoded JSON or a string). */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- a typed cast of test input
function json<T>(body: unknown): T {
  return (typeof body === 'string' ? JSON.parse(body) : body) as T;
}

/** Interceptors: GET of a pool that does not exist. */
function gone(ns: string, name: string): nock.Scope {
  return nock(API)
    .get(poolPath(ns, name))
    .reply(404, statusBody(404, 'NotFound', `virtualmachinepools "${name}" not found`));
}

/**
 * Interceptors: the member lists a scope-wide reconcile reads once per window, in each namespace of
 * the window's `pools`, selected by their pool-uid label as the API server does.
 */
function members(
  pools: readonly VirtualMachinePool[],
  vms: readonly VirtualMachine[] = [],
  disks: readonly VirtualDisk[] = [],
): nock.Scope {
  let scope = nock(API);
  const nsOf = (o: { metadata: { namespace?: string } }): string => o.metadata.namespace ?? '';
  for (const ns of new Set(pools.map(nsOf))) {
    const uids = pools.filter((p) => nsOf(p) === ns).map((p) => p.metadata.uid ?? '');
    const mine = (o: VirtualMachine | VirtualDisk): boolean =>
      nsOf(o) === ns && uids.includes(o.metadata.labels?.[keys.poolUid] ?? '');
    const q = {
      labelSelector: `${keys.poolUid} in (${uids.join(',')})`,
      limit: String(WINDOW_PAGE.limit),
    };
    scope = scope
      .get(`${BASE}/namespaces/${ns}/virtualmachines`)
      .query(q)
      .reply(200, list(vms.filter(mine)))
      .get(`${BASE}/namespaces/${ns}/virtualdisks`)
      .query(q)
      .reply(200, list(disks.filter(mine)));
  }
  return scope;
}

/** The query of a scope's first page of pools. */
const POOLS = { limit: String(WINDOW) };

const unmatched = guardNock();
noClaims();

describe('reconcile-pool: which pool an event points at', () => {
  it.each(['add', 'update', 'delete'])(
    'Resource mode pool %s event: GET that pool (gone → 204)',
    async (verb) => {
      const scope = gone('ci', 'runners');
      const res = await build().app.request('/', binaryEvent(`${RES}${verb}`, pool()));
      expect(res.status).toBe(204);
      expect(await res.text()).toBe('');
      scope.done();
      expect(unmatched.seen).toEqual([]);
    },
  );

  it('Resource mode VM event: mapped through the controller ownerReference', async () => {
    const member = vm(pool({ name: 'alpha' }), 'alpha-xxxxx', { labels: {} });
    // Only the ownerReference names the pool.
    delete member.metadata.labels;
    const scope = gone('ci', 'alpha');
    const res = await build().app.request('/', binaryEvent(`${RES}update`, member));
    expect(res.status).toBe(204);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('Resource mode VM event: mapped through the pool label when there is no controller', async () => {
    const member = vm(pool({ name: 'beta' }), 'beta-xxxxx');
    delete member.metadata.ownerReferences;
    expect(member.metadata.labels?.[keys.pool]).toBe('beta');
    const scope = gone('ci', 'beta');
    const res = await build().app.request('/', binaryEvent(`${RES}add`, member));
    expect(res.status).toBe(204);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('Resource mode VirtualDisk owned by a VM: mapped through its pool label', async () => {
    const p = pool({ name: 'gamma' });
    const d = disk(p, 'gamma-xxxxx-root', { template: 'root', owner: vm(p, 'gamma-xxxxx') });
    const scope = gone('ci', 'gamma');
    const res = await build().app.request('/', binaryEvent(`${RES}delete`, d));
    expect(res.status).toBe(204);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('Resource mode object with neither owner nor label: every pool of its namespace', async () => {
    const orphan = {
      apiVersion: VM_API,
      kind: 'VirtualMachine',
      metadata: { name: 'lonely', namespace: 'ci', uid: 'u-lonely', resourceVersion: '3' },
      spec: {},
    };
    const c = converged(pool({ replicas: 1 }), ['runners-aaaaa']);
    const window = [c.pool, pool({ name: 'other', uid: 'u-other' })];
    // One list per resource type; the converged pool is not read again, the other one (3 replicas
    // and no members) is reconciled on its own reads.
    const scope = nock(API)
      .get(`${BASE}/namespaces/ci/virtualmachinepools`)
      .query(POOLS)
      .reply(200, list(window));
    const lists = members(window, c.vms, c.disks);
    const other = gone('ci', 'other');
    const res = await build().app.request('/', binaryEvent(`${RES}update`, orphan));
    expect(res.status).toBe(202);
    scope.done();
    lists.done();
    other.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('Reference mode pool event: GET that pool', async () => {
    const scope = gone('ns1', 'p1');
    const res = await build().app.request(
      '/',
      binaryEvent(`${REF}update`, ref('VirtualMachinePool', 'ns1', 'p1', VM_API)),
    );
    expect(res.status).toBe(204);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('Reference mode VM event: GET the VM, then its pool', async () => {
    const member = vm(pool({ name: 'delta', namespace: 'ns1' }), 'delta-xxxxx');
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns1/virtualmachines/delta-xxxxx`)
      .reply(200, member);
    const p = gone('ns1', 'delta');
    const res = await build().app.request(
      '/',
      binaryEvent(`${REF}update`, ref('VirtualMachine', 'ns1', 'delta-xxxxx', VM_API)),
    );
    expect(res.status).toBe(204);
    scope.done();
    p.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('Reference mode VM that is gone (404): every pool of the namespace', async () => {
    const p1Pool = pool({ name: 'p1', namespace: 'ns1', uid: 'u-p1' });
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns1/virtualmachines/gone-xxxxx`)
      .reply(404, statusBody(404, 'NotFound'))
      .get(`${BASE}/namespaces/ns1/virtualmachinepools`)
      .query(POOLS)
      .reply(200, list([p1Pool]));
    const lists = members([p1Pool]);
    const p1 = gone('ns1', 'p1');
    const res = await build().app.request(
      '/',
      binaryEvent(`${REF}delete`, ref('VirtualMachine', 'ns1', 'gone-xxxxx', VM_API)),
    );
    expect(res.status).toBe(204);
    scope.done();
    lists.done();
    p1.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('Reference mode VirtualDisk: every pool of the namespace (the disk is not read)', async () => {
    const scope = nock(API)
      .get(`${BASE}/namespaces/ns2/virtualmachinepools`)
      .query(POOLS)
      .reply(200, list([]));
    const res = await build().app.request(
      '/',
      binaryEvent(`${REF}add`, ref('VirtualDisk', 'ns2', 'some-disk', VM_API)),
    );
    // No pool in the namespace: nothing to do, still a success.
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('PingSource tick without data: every pool of the cluster', async () => {
    const c = converged(pool({ replicas: 1 }), ['runners-aaaaa']);
    const window = [c.pool, pool({ name: 'p2', namespace: 'ns2', uid: 'u-p2' })];
    const scope = nock(API)
      .get(`${BASE}/virtualmachinepools`)
      .query(POOLS)
      .reply(200, list(window));
    // The member lists of the window's two namespaces; only p2, which the lists show short of
    // members, is read again.
    const lists = members(window, c.vms, c.disks);
    const p2 = gone('ns2', 'p2');
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    lists.done();
    p2.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('PingSource tick with {"namespace":"x"}: only that namespace', async () => {
    const px0 = pool({ name: 'px', namespace: 'x', uid: 'u-px' });
    const scope = nock(API)
      .get(`${BASE}/namespaces/x/virtualmachinepools`)
      .query(POOLS)
      .reply(200, list([px0]));
    const lists = members([px0]);
    const px = gone('x', 'px');
    const res = await build().app.request('/', binaryEvent(PING, { namespace: 'x' }));
    expect(res.status).toBe(204);
    scope.done();
    lists.done();
    px.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('structured-mode event (application/cloudevents+json)', async () => {
    const scope = gone('ci', 'runners');
    const res = await build().app.request('/', structuredEvent(`${RES}update`, pool()));
    expect(res.status).toBe(204);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('binary-mode event with the ApiServerSource extensions and subject', async () => {
    const scope = gone('ci', 'runners');
    const res = await build().app.request(
      '/',
      binaryEvent(`${REF}add`, ref('VirtualMachinePool', 'ci', 'runners', VM_API), {
        'ce-subject':
          '/apis/virtualization.deckhouse.io/v1alpha2/namespaces/ci/virtualmachinepools/runners',
        'ce-kind': 'VirtualMachinePool',
        'ce-name': 'runners',
        'ce-namespace': 'ci',
        'ce-apiversion': VM_API,
      }),
    );
    expect(res.status).toBe(204);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });
});

/** Interceptors: a converged pool's reads (GET the pool, list its VMs and disks), once each. */
function convergedReads(c: ReturnType<typeof converged>): nock.Scope {
  return nock(API)
    .get(poolPath('ci', 'runners'))
    .reply(200, c.pool)
    .get(`${BASE}/namespaces/ci/virtualmachines`)
    .query(true)
    .reply(200, list(c.vms))
    .get(`${BASE}/namespaces/ci/virtualdisks`)
    .query(true)
    .reply(200, list(c.disks));
}

describe('reconcile-pool: what it answers', () => {
  /** Reconciles a converged pool: 202 with an empty body after exactly three GETs. */
  async function quiet(c: ReturnType<typeof converged>): Promise<void> {
    const methods: string[] = [];
    const scope = convergedReads(c);
    scope.on('request', (req: { method: string }) => {
      methods.push(req.method);
    });
    const res = await build().app.request('/', binaryEvent(`${RES}update`, c.pool));
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    scope.done();
    expect(methods).toEqual(['GET', 'GET', 'GET']);
    expect(unmatched.seen).toEqual([]);
  }

  it('a converged pool: 202, only GET pool and two lists, zero writes', async () => {
    await quiet(converged(pool({ replicas: 2 }), ['runners-aaaaa', 'runners-bbbbb']));
  });

  it("a converged pool no claim touches: its or a member's event lists no claims, a claim's event does", async () => {
    const c = converged(pool({ replicas: 2 }), ['runners-aaaaa', 'runners-bbbbb']);
    expect(c.pool.status).toMatchObject({ pendingClaims: 0, claimedReplicas: 0 });
    const kube = testKube();
    const app = buildReconcileApp({
      kube,
      log: testLog('test'),
      metrics: createFunctionMetrics(),
      now: () => NOW,
      rand: () => 0,
    });
    /** Lists made for one event (the claims' list answered by noClaims). */
    const lists = async (data: object): Promise<number> => {
      const scope = convergedReads(c);
      const before = kube.counts().list ?? 0;
      const res = await app.request('/', binaryEvent(`${RES}update`, data));
      expect(res.status).toBe(202);
      scope.done();
      return (kube.counts().list ?? 0) - before;
    };
    expect(await lists(c.pool)).toBe(2);
    expect(await lists(c.vms[0] ?? {})).toBe(2);
    expect(await lists(claim('job-1', { pool: 'runners' }))).toBe(3);
    expect(unmatched.seen).toEqual([]);
  });

  it('a converged pool with every lifecycle knob set: still only three GETs, zero writes (L5)', async () => {
    const p = pool({ replicas: 2 });
    p.spec.standby = { replicas: 2, state: 'Stopped', reuseOnScaleDown: true };
    p.spec.healing = { startupTimeout: '5m' };
    p.spec.rollout = { maxUnavailable: 1 };
    p.spec.minReadySeconds = 30;
    p.spec.maxMemberAge = '24h';
    const names = ['runners-aaaaa', 'runners-bbbbb', 'runners-ccccc', 'runners-ddddd'];
    const c = converged(p, names, new Set(names.slice(2)));
    expect(c.pool.status).toMatchObject({ replicas: 2, standbyReplicas: 2, unhealthyReplicas: 0 });
    await quiet(c);
  });

  it('a pool that is gone: 204 with an empty body', async () => {
    const scope = gone('ci', 'runners');
    const res = await build().app.request(
      '/',
      binaryEvent(`${REF}delete`, ref('VirtualMachinePool', 'ci', 'runners', VM_API)),
    );
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    scope.done();
  });

  it('a scale-up: intent recorded first, then disks and VM created, then intent cleared → 202', async () => {
    const p = pool({ replicas: 1 });
    const order: string[] = [];
    let recorded: VirtualMachinePool | undefined;
    let cleared: VirtualMachinePool | undefined;
    const createdDisks: VirtualDisk[] = [];
    let createdVm: VirtualMachine | undefined;
    const events: PoolEventBody[] = [];
    const scope = nock(API)
      // Pass 1: nothing exists yet.
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .reply(200, list([]))
      .get(`${BASE}/namespaces/ci/virtualdisks`)
      .query(true)
      .reply(200, list([]))
      .put(`${poolPath('ci', 'runners')}/status`)
      .query({ fieldManager: 'vmpool' })
      .reply((_uri, body) => {
        order.push('PUT status');
        recorded = json<VirtualMachinePool>(body);
        return [200, { ...recorded, metadata: { ...recorded.metadata, resourceVersion: '101' } }];
      })
      .post(`${BASE}/namespaces/ci/virtualdisks`)
      .query({ fieldManager: 'vmpool' })
      .times(2)
      .reply((_uri, body) => {
        const d = json<VirtualDisk>(body);
        order.push(`POST disk ${d.metadata.name ?? ''}`);
        createdDisks.push(d);
        return [
          201,
          {
            ...d,
            metadata: { ...d.metadata, uid: `uid-${d.metadata.name ?? ''}`, resourceVersion: '1' },
          },
        ];
      })
      .post(`${BASE}/namespaces/ci/virtualmachines`)
      .query({ fieldManager: 'vmpool' })
      .reply((_uri, body) => {
        const v = json<VirtualMachine>(body);
        order.push(`POST vm ${v.metadata.name ?? ''}`);
        createdVm = { ...v, metadata: { ...v.metadata, uid: 'uid-new-vm', resourceVersion: '1' } };
        return [201, createdVm];
      })
      .post(eventsPath('ci'))
      .reply((_uri, body) => {
        events.push(json<PoolEventBody>(body));
        return [201, json<object>(body)];
      })
      // Pass 2: everything the first pass created is there.
      .get(poolPath('ci', 'runners'))
      .reply(() => [
        200,
        { ...recorded, metadata: { ...recorded?.metadata, resourceVersion: '101' } },
      ])
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .reply(() => [200, list(createdVm === undefined ? [] : [createdVm])])
      .get(`${BASE}/namespaces/ci/virtualdisks`)
      .query(true)
      .reply(() => [
        200,
        list(
          createdDisks.map((d) => ({
            ...d,
            metadata: { ...d.metadata, uid: `uid-${d.metadata.name ?? ''}`, resourceVersion: '1' },
          })),
        ),
      ])
      .put(`${poolPath('ci', 'runners')}/status`)
      .query({ fieldManager: 'vmpool' })
      .reply((_uri, body) => {
        order.push('PUT status');
        cleared = json<VirtualMachinePool>(body);
        return [200, { ...cleared, metadata: { ...cleared.metadata, resourceVersion: '102' } }];
      });

    const res = await build(seededRandom(7)).app.request('/', binaryEvent(`${RES}update`, p));
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    scope.done();
    expect(unmatched.seen).toEqual([]);

    // The intent write is conditioned on the resourceVersion read and names the VM to create.
    expect(recorded?.metadata.resourceVersion).toBe('100');
    const creates = recorded?.status?.intent?.creates ?? [];
    expect(creates).toHaveLength(1);
    const name = creates[0] ?? '';
    expect(name).toMatch(/^runners-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(createdVm?.metadata.name).toBe(name);
    expect(order[0]).toBe('PUT status');
    expect(order.at(-1)).toBe('PUT status');
    // The Retain disk is created before the VM; the VM's Delete disk after it, owned by its uid.
    const cache = createdDisks.find((d) => d.metadata.labels?.[keys.diskTemplate] === 'cache');
    const root = createdDisks.find((d) => d.metadata.name === `${name}-root`);
    expect(order.indexOf(`POST disk ${cache?.metadata.name ?? '?'}`)).toBeLessThan(
      order.indexOf(`POST vm ${name}`),
    );
    expect(order.indexOf(`POST disk ${name}-root`)).toBeGreaterThan(
      order.indexOf(`POST vm ${name}`),
    );
    expect(root?.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachine',
      name,
      uid: 'uid-new-vm',
      controller: true,
    });
    expect(createdVm?.spec.blockDeviceRefs?.map((r) => r.name)).toEqual([
      `${name}-root`,
      cache?.metadata.name,
      'tools-iso',
    ]);
    expect(recorded?.status?.intent?.bindings).toEqual([
      { vm: name, template: 'cache', disk: cache?.metadata.name },
    ]);
    // The second pass clears the intent under the resourceVersion the first write returned.
    expect(cleared?.metadata.resourceVersion).toBe('101');
    expect(cleared?.status?.intent).toBeUndefined();
    expect(cleared?.status?.replicas).toBe(1);
    expect(events.map((e) => [e.type, e.reason])).toEqual([['Normal', 'SuccessfulCreate']]);
  });

  it('a scale-down: victim recorded, deleted with a uid precondition, its Retain disk freed → 202', async () => {
    const c = converged(pool({ replicas: 2 }), ['runners-aaaaa', 'runners-bbbbb']);
    const p = { ...c.pool, spec: { ...c.pool.spec, replicas: 1 } };
    let recorded: VirtualMachinePool | undefined;
    let deleteBody: unknown;
    let stamped: VirtualDisk | undefined;
    const events: PoolEventBody[] = [];
    const victimName = (): string => recorded?.status?.intent?.deletes?.[0]?.name ?? '?';
    const survivor = (): VirtualMachine[] => c.vms.filter((v) => v.metadata.name !== victimName());
    const survivorDisks = (): VirtualDisk[] =>
      c.disks.filter((d) => d.metadata.name !== `${victimName()}-root`);
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .reply(200, list(c.vms))
      .get(`${BASE}/namespaces/ci/virtualdisks`)
      .query(true)
      .reply(200, list(c.disks))
      .put(`${poolPath('ci', 'runners')}/status`)
      .query({ fieldManager: 'vmpool' })
      .reply((_uri, body) => {
        recorded = json<VirtualMachinePool>(body);
        return [200, { ...recorded, metadata: { ...recorded.metadata, resourceVersion: '101' } }];
      })
      .delete(/\/namespaces\/ci\/virtualmachines\/runners-/, (body: unknown) => {
        deleteBody = body;
        return true;
      })
      .query(true)
      .reply(200, {})
      .post(eventsPath('ci'))
      .reply((_uri, body) => {
        events.push(json<PoolEventBody>(body));
        return [201, json<object>(body)];
      })
      // Pass 2: the victim and its Delete disk are gone; its Retain disk is free.
      .get(poolPath('ci', 'runners'))
      .reply(() => [
        200,
        { ...recorded, metadata: { ...recorded?.metadata, resourceVersion: '101' } },
      ])
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .reply(() => [200, list(survivor())])
      .get(`${BASE}/namespaces/ci/virtualdisks`)
      .query(true)
      .reply(() => [200, list(survivorDisks())])
      // Freeing a disk: every VM of the namespace is read first (none outside the pool uses it).
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query({ labelSelector: '', limit: '500' })
      .reply(() => [200, list(survivor())])
      // No status write: the fence already said what this pass finds (1 replica), and the recorded
      // delete that is done is inert.
      .put(/\/namespaces\/ci\/virtualdisks\/runners-cache-/)
      .query({ fieldManager: 'vmpool' })
      .reply((_uri, body) => {
        stamped = json<VirtualDisk>(body);
        return [200, { ...stamped, metadata: { ...stamped.metadata, resourceVersion: '8' } }];
      })
      // Pass 3: nothing left to do.
      .get(poolPath('ci', 'runners'))
      .reply(() => [
        200,
        { ...recorded, metadata: { ...recorded?.metadata, resourceVersion: '101' } },
      ])
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .reply(() => [200, list(survivor())])
      .get(`${BASE}/namespaces/ci/virtualdisks`)
      .query(true)
      .reply(() => [
        200,
        list(
          survivorDisks().map((d) => (d.metadata.name === stamped?.metadata.name ? stamped : d)),
        ),
      ]);

    const res = await build().app.request('/', binaryEvent(`${RES}update`, p));
    expect(res.status).toBe(202);
    scope.done();
    expect(unmatched.seen).toEqual([]);
    const victim = c.vms.find((v) => v.metadata.name === victimName());
    expect(recorded?.metadata.resourceVersion).toBe('100');
    expect(recorded?.status?.intent?.deletes).toEqual([
      { name: victim?.metadata.name, uid: victim?.metadata.uid },
    ]);
    expect(deleteBody).toMatchObject({
      kind: 'DeleteOptions',
      propagationPolicy: 'Background',
      preconditions: { uid: victim?.metadata.uid },
    });
    expect(events.map((e) => [e.type, e.reason])).toEqual([['Normal', 'SuccessfulDelete']]);
    // The fence reports the pool as its delete leaves it (the victim has no finalizer: gone at once).
    expect(recorded?.status?.replicas).toBe(1);
    expect(recorded?.status?.conditions?.map((x) => x.type)).not.toContain('Progressing');
    // The victim's Retain disk is stamped free (under the resourceVersion read), not deleted.
    const victimCache = victim?.spec.blockDeviceRefs?.[1]?.name;
    expect(stamped?.metadata.name).toBe(victimCache);
    expect(stamped?.metadata.resourceVersion).toBe('7');
    expect(stamped?.metadata.annotations?.[keys.freeSince]).toBe('2025-01-01T12:00:00Z');
  });

  it('status PUT 409 on every pass: 503 with Retry-After', async () => {
    const p = pool({ replicas: 1 });
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .times(6)
      .reply(200, p)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .times(6)
      .reply(200, list([]))
      .get(`${BASE}/namespaces/ci/virtualdisks`)
      .query(true)
      .times(6)
      .reply(200, list([]))
      .put(`${poolPath('ci', 'runners')}/status`)
      .query({ fieldManager: 'vmpool' })
      .times(6)
      .reply(409, statusBody(409, 'Conflict', 'the object has been modified'));
    const res = await build().app.request('/', binaryEvent(`${RES}update`, p));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(((await res.json()) as { error: string }).error).toContain('runners');
    scope.done();
    // Nothing was created: every write stayed behind the failed fence.
    expect(unmatched.seen).toEqual([]);
  });

  it('a list answering 500 through every kube retry: 503', async () => {
    const scope = failingList(`${BASE}/virtualmachinepools`, true, 'etcd is sad');
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).not.toBeNull();
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a pool whose VM list keeps failing: 503 after the passes', async () => {
    const p = pool({ replicas: 1 });
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .times(6)
      .reply(200, p)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .times(18)
      .reply(500, statusBody(500, 'InternalError'))
      .get(`${BASE}/namespaces/ci/virtualdisks`)
      .query(true)
      .times(6)
      .reply(200, list([]));
    const res = await build().app.request('/', binaryEvent(`${RES}update`, p));
    expect(res.status).toBe(503);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a VM create refused with 422: 202 and a Warning FailedCreate Event', async () => {
    const p = pool({ replicas: 1 });
    const message =
      'admission webhook "vm.virtualization-controller.validate.d8-virtualization" denied the request: bad cores';
    let event: PoolEventBody | undefined;
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .reply(200, list([]))
      .get(`${BASE}/namespaces/ci/virtualdisks`)
      .query(true)
      .reply(200, list([]))
      .put(`${poolPath('ci', 'runners')}/status`)
      .query({ fieldManager: 'vmpool' })
      .reply((_uri, body) => {
        const s = json<VirtualMachinePool>(body);
        return [200, { ...s, metadata: { ...s.metadata, resourceVersion: '101' } }];
      })
      .post(`${BASE}/namespaces/ci/virtualdisks`)
      .query({ fieldManager: 'vmpool' })
      .reply((_uri, body) => [
        201,
        {
          ...json<VirtualDisk>(body),
          metadata: { ...json<VirtualDisk>(body).metadata, uid: 'u-d' },
        },
      ])
      .post(`${BASE}/namespaces/ci/virtualmachines`)
      .query({ fieldManager: 'vmpool' })
      .reply(422, statusBody(422, 'Invalid', message))
      .post(eventsPath('ci'))
      .reply((_uri, body) => {
        event = json<PoolEventBody>(body);
        return [201, json<object>(body)];
      });
    const res = await build().app.request('/', binaryEvent(`${RES}update`, p));
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    scope.done();
    expect(unmatched.seen).toEqual([]);
    expect(event).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      type: 'Warning',
      reason: 'FailedCreate',
      action: 'Create',
      reportingController: 'vmpool',
      regarding: {
        kind: 'VirtualMachinePool',
        name: 'runners',
        namespace: 'ci',
        uid: 'pool-uid-1',
      },
    });
    expect(event?.note).toContain(message);
  });

  describe('malformed events: refused without an API call', () => {
    it('missing ce-source → 400', async () => {
      const init = binaryEvent(PING);
      const headers = { ...(init.headers as Record<string, string>) };
      delete headers['ce-source'];
      const res = await build().app.request('/', { ...init, headers });
      expect(res.status).toBe(400);
      expect(unmatched.seen).toEqual([]);
    });

    it('a batch (application/cloudevents-batch+json) → 415, not retried', async () => {
      // The shared HTTP layer answers a batch 415 Unsupported Media Type (a 4xx, so the broker does
      // not redeliver it), not 400.
      const res = await build().app.request('/', {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents-batch+json' },
        body: JSON.stringify([{ specversion: '1.0', id: '1', source: 's', type: PING }]),
      });
      expect(res.status).toBe(415);
      expect(unmatched.seen).toEqual([]);
    });

    it('a body that is not JSON → 400', async () => {
      const res = await build().app.request('/', {
        ...binaryEvent(`${RES}update`),
        body: '{"kind": "VirtualMachinePool", oops',
      });
      expect(res.status).toBe(400);
      expect(unmatched.seen).toEqual([]);
    });

    it('a structured body that is not JSON → 400', async () => {
      const res = await build().app.request('/', {
        method: 'POST',
        headers: { 'content-type': 'application/cloudevents+json' },
        body: '{not json',
      });
      expect(res.status).toBe(400);
    });

    it('an unrelated type (dev.example.other) → 400', async () => {
      const res = await build().app.request('/', binaryEvent('dev.example.other', { a: 1 }));
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toContain(
        'not an ApiServerSource or PingSource event',
      );
      expect(unmatched.seen).toEqual([]);
    });

    it('a Resource mode event whose data is not an object with metadata → 400', async () => {
      const res = await build().app.request('/', binaryEvent(`${RES}update`, { kind: 'X' }));
      expect(res.status).toBe(400);
    });

    it.each([
      [
        'a pool in namespace ".."',
        `${RES}update`,
        { ...pool(), metadata: { ...pool().metadata, namespace: '..' } },
      ],
      [
        'a pool named "a/b"',
        `${RES}update`,
        { ...pool(), metadata: { ...pool().metadata, name: 'a/b' } },
      ],
      [
        'a Reference to a VM in "../x"',
        `${REF}update`,
        { apiVersion: VM_API, kind: 'VirtualMachine', name: 'v', namespace: '../x' },
      ],
      ['a tick for namespace "A_B"', PING, { namespace: 'A_B' }],
    ])('%s: names no object can have → 400 before any API call', async (_what, type, data) => {
      const res = await build().app.request('/', binaryEvent(type, data));
      expect(res.status).toBe(400);
      expect(unmatched.seen).toEqual([]);
    });
  });

  it('a body over 1 MiB → 413', async () => {
    const big = { ...pool(), padding: 'x'.repeat(1024 * 1024 + 10) };
    const res = await build().app.request('/', binaryEvent(`${RES}update`, big));
    expect(res.status).toBe(413);
    expect(unmatched.seen).toEqual([]);
  });

  it('health endpoints answer 200', async () => {
    const { app } = build();
    for (const path of ['/health/liveness', '/health/readiness']) {
      const res = await app.request(path);
      expect([path, res.status, await res.text()]).toEqual([path, 200, 'OK']);
    }
  });

  it('/metrics counts reconciles by outcome', async () => {
    const scope = gone('ci', 'runners');
    const { app } = build();
    expect((await app.request('/', binaryEvent(`${RES}delete`, pool()))).status).toBe(204);
    scope.done();
    const res = await app.request('/metrics');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('vmpool_reconciles_total');
    expect(text).toMatch(/vmpool_reconciles_total\{[^}]*outcome="gone"[^}]*\} 1/);
  });
});

describe('reconcile-pool: events of its own writes', () => {
  /** An app whose own writes hold `member` at its resourceVersion, read past by a later pass. */
  async function wrote(member: VirtualMachine) {
    const writes = ownWrites();
    const tracked = writes.track({
      createVm: () => Promise.resolve({ ok: true, value: member }),
    } as unknown as Kube);
    await tracked.kube.createVm('ci', member);
    tracked.readsBegin()();
    return build(() => 0, writes);
  }

  it('an add of a VM it created and read past: 202, no API call; the same event again is reconciled', async () => {
    const member = vm(pool({ name: 'delta' }), 'delta-xxxxx');
    member.metadata.resourceVersion = '42';
    const { app, metrics } = await wrote(member);
    const first = await app.request('/', binaryEvent(`${RES}add`, member));
    expect(first.status).toBe(202);
    expect(unmatched.seen).toEqual([]);
    expect(metrics.registry.render()).toMatch(
      /vmpool_reconciles_total\{[^}]*outcome="ownWrite"[^}]*\} 1/,
    );
    // A redelivery is not known as a write any more: the pool is read.
    const scope = gone('ci', 'delta');
    expect((await app.request('/', binaryEvent(`${RES}add`, member))).status).toBe(204);
    scope.done();
  });

  it('says on /metrics how many own writes it remembers as read past', async () => {
    const [a, b] = ['delta-aaaaa', 'delta-bbbbb'].map((n, i) => {
      const m = vm(pool({ name: 'delta' }), n);
      m.metadata.resourceVersion = String(50 + i);
      return m;
    }) as [VirtualMachine, VirtualMachine];
    const writes = ownWrites();
    const tracked = writes.track({
      createVm: (_ns: string, m: VirtualMachine) => Promise.resolve({ ok: true, value: m }),
    } as unknown as Kube);
    await tracked.kube.createVm('ci', a);
    await tracked.kube.createVm('ci', b);
    tracked.readsBegin()();
    const { app, metrics } = build(() => 0, writes);
    expect((await app.request('/', binaryEvent(`${RES}add`, a))).status).toBe(202);
    expect(metrics.registry.render()).toMatch(/^vmpool_own_writes_remembered 1$/m);
    expect((await app.request('/', binaryEvent(`${RES}add`, b))).status).toBe(202);
    expect(metrics.registry.render()).toMatch(/^vmpool_own_writes_remembered 0$/m);
  });

  it('is known before the event is parsed as a model: no model parse, no read for an own write', async () => {
    const member = vm(pool({ name: 'delta' }), 'delta-xxxxx');
    member.metadata.resourceVersion = '42';
    const { app } = await wrote(member);
    // The version alone says it is the object this process wrote and read past; a kind the event
    // model would refuse changes nothing, and a redelivery of it is refused as any malformed event.
    const bare = { metadata: { uid: member.metadata.uid, resourceVersion: '42' } };
    expect((await app.request('/', binaryEvent(`${RES}add`, bare))).status).toBe(202);
    expect((await app.request('/', binaryEvent(`${RES}add`, bare))).status).toBe(400);
    expect(unmatched.seen).toEqual([]);
  });

  it('another version of the object, or its delete, is reconciled', async () => {
    const member = vm(pool({ name: 'delta' }), 'delta-xxxxx');
    member.metadata.resourceVersion = '42';
    const { app } = await wrote(member);
    const newer = { ...member, metadata: { ...member.metadata, resourceVersion: '43' } };
    let scope = gone('ci', 'delta');
    expect((await app.request('/', binaryEvent(`${RES}update`, newer))).status).toBe(204);
    scope.done();
    scope = gone('ci', 'delta');
    expect((await app.request('/', binaryEvent(`${RES}delete`, member))).status).toBe(204);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });
});

describe('reconcile-pool: drain deadlines', () => {
  it('a pool waiting on a drain is reconciled again at its deadline (zero writes meanwhile)', async () => {
    const base = pool({ replicas: 3 });
    base.spec.scaleDown = { drainTimeout: '10m' };
    const c = converged(base, ['runners-aaaaa', 'runners-bbbbb', 'runners-ccccc']);
    // Scaled to 2 and runners-ccccc asked to drain a minute ago: the stored status says so.
    const asked = new Date(NOW.getTime() - 60_000).toISOString().replace('.000', '');
    const vms = c.vms.map((v) =>
      v.metadata.name === 'runners-ccccc'
        ? {
            ...v,
            metadata: {
              ...v.metadata,
              annotations: { ...v.metadata.annotations, [keys.drainRequested]: asked },
            },
          }
        : v,
    );
    const scaled = { ...c.pool, spec: { ...c.pool.spec, replicas: 2 } };
    const waiting = {
      ...scaled,
      status: plan({ pool: scaled, vms, disks: c.disks }, NOW, () => 0).status,
    };
    expect(waiting.status.intent?.deletes?.map((d) => d.name)).toEqual(['runners-ccccc']);
    const reads = () =>
      nock(API)
        .get(poolPath('ci', 'runners'))
        .reply(200, waiting)
        .get(`${BASE}/namespaces/ci/virtualmachines`)
        .query(true)
        .reply(200, list(vms))
        .get(`${BASE}/namespaces/ci/virtualdisks`)
        .query(true)
        .reply(200, list(c.disks));
    const due: Array<{ key: string; when: Date; run: () => void }> = [];
    const app = buildReconcileApp({
      kube: testKube(),
      log: testLog('test'),
      now: () => NOW,
      rand: () => 0,
      rechecks: { at: (key, when, run) => due.push({ key, when, run }), pending: () => [] },
    });
    const first = reads();
    expect((await app.request('/', binaryEvent(`${RES}update`, waiting))).status).toBe(202);
    first.done();
    expect(due.map((d) => [d.key, d.when])).toEqual([
      ['ci/runners', new Date(NOW.getTime() + 9 * 60_000)],
    ]);
    // The timer's reconcile reads the pool again (here still waiting: it schedules itself again).
    const second = reads();
    due[0]!.run();
    await vi.waitFor(() => {
      expect(due).toHaveLength(2);
    });
    second.done();
    expect(unmatched.seen).toEqual([]);
  });
});

describe('reconcile-pool: an object that does not parse stops only its own pool (L8)', () => {
  const other = pool({ name: 'other', namespace: 'ns2', uid: 'pool-uid-2', replicas: 1 });
  /** other's only member, with a runPolicy only a newer platform knows: the model refuses it. */
  const unreadable = (() => {
    const v = vm(other, 'other-aaaaa');
    return { ...v, spec: { ...v.spec, runPolicy: 'SomeFutureMode' } };
  })();

  /** Interceptors: other's Synced=False write and its Event, recording both bodies. */
  function blocked(seen: { status?: VirtualMachinePool; event?: PoolEventBody }): nock.Scope {
    return nock(API)
      .put(`${poolPath('ns2', 'other')}/status`, (body: unknown) => {
        seen.status = json<VirtualMachinePool>(body);
        return true;
      })
      .query(true)
      .reply(200, (_uri: string, body: unknown) => json<VirtualMachinePool>(body))
      .post(eventsPath('ns2'), (body: unknown) => {
        seen.event = json<PoolEventBody>(body);
        return true;
      })
      .reply(201, {});
  }

  function expectMalformedMember(seen: { status?: VirtualMachinePool; event?: PoolEventBody }) {
    const synced = seen.status?.status?.conditions?.find((c) => c.type === 'Synced');
    expect(synced).toMatchObject({ status: 'False', reason: 'MalformedMember' });
    expect(synced?.message).toContain('VirtualMachine ns2/other-aaaaa claims this pool');
    expect(synced?.message).toContain('spec.runPolicy');
    expect(seen.event).toMatchObject({ type: 'Warning', reason: 'MalformedMember' });
    expect(seen.event?.note).toBe(synced?.message);
  }

  it('a resync tick: the other pool gets Synced=False MalformedMember; a converged pool stays quiet → 202', async () => {
    const c = converged(pool({ replicas: 2 }), ['runners-aaaaa', 'runners-bbbbb']);
    const scope = nock(API)
      .get(`${BASE}/virtualmachinepools`)
      .query(POOLS)
      .reply(200, list([c.pool, other]));
    const lists = members([c.pool, other], [...c.vms, unreadable as VirtualMachine], c.disks);
    const seen: { status?: VirtualMachinePool; event?: PoolEventBody } = {};
    const writes = blocked(seen);
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    lists.done();
    writes.done();
    expectMalformedMember(seen);
    // runners was planned from the lists and left alone; other created nothing in place of the
    // member it could not read (an unseen member would otherwise be replaced: L1).
    expect(unmatched.seen).toEqual([]);
  });

  it("the pool's own reconcile fails closed: no create, Synced=False and an Event → 202", async () => {
    const scope = nock(API)
      .get(poolPath('ns2', 'other'))
      .reply(200, other)
      .get(`${BASE}/namespaces/ns2/virtualmachines`)
      .query({ labelSelector: `${keys.poolUid}=pool-uid-2`, limit: '500' })
      .reply(200, list([unreadable]))
      .get(`${BASE}/namespaces/ns2/virtualdisks`)
      .query({ labelSelector: `${keys.poolUid}=pool-uid-2`, limit: '500' })
      .reply(200, list([]));
    const seen: { status?: VirtualMachinePool; event?: PoolEventBody } = {};
    const writes = blocked(seen);
    const res = await build().app.request('/', binaryEvent(`${RES}update`, other));
    expect(res.status).toBe(202);
    scope.done();
    writes.done();
    expectMalformedMember(seen);
    expect(unmatched.seen).toEqual([]);
  });

  it('a pool that does not parse itself: one GET, no write, 202 (not redelivered pass after pass)', async () => {
    const broken = { ...other, spec: { ...other.spec, replicas: 'many' } };
    const scope = nock(API).get(poolPath('ns2', 'other')).reply(200, broken);
    const res = await build().app.request('/', binaryEvent(`${RES}update`, other));
    expect(res.status).toBe(202);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });
});
