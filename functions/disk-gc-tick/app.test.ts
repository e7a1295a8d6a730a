import nock from 'nock';
import { describe, expect, it } from 'vitest';
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../../shared/api/index.js';
import { keys } from '../../shared/api/index.js';
import { createFunctionMetrics } from '../../shared/http/index.js';
import {
  API,
  BASE,
  binaryEvent,
  eventsPath,
  failingList,
  guardNock,
  list,
  ref,
  statusBody,
  structuredEvent,
  testKube,
} from '../../test/functions/fixtures.js';
import {
  HOUR,
  MINUTE,
  NOW,
  at,
  disk,
  pool,
  runnersDiskTemplates,
  vm,
} from '../../test/unit/builders.js';
import { buildGcApp } from './app.js';
import { GC_PAGE } from '../../shared/reconcile/index.js';
import { testLog } from '../../test/logs.js';

const PING = 'dev.knative.sources.ping';
/** A page of the pass's lists. */
const PAGE = { limit: String(GC_PAGE) };
/** The first page of every pool-labelled disk of the cluster. */
const DISKS = { labelSelector: keys.poolUid, ...PAGE };
/** The list of every VM of a namespace, a pool's or not. */
const EVERY_VM = { labelSelector: '', limit: '500' };

/** Interceptors of the pass's two lists: every pool, and every pool-labelled disk of the cluster. */
function passLists(c: { disks: VirtualDisk[] }, pools: VirtualMachinePool[]): nock.Scope {
  return nock(API)
    .get(`${BASE}/virtualmachinepools`)
    .query(PAGE)
    .reply(200, list(pools))
    .get(`${BASE}/virtualdisks`)
    .query(DISKS)
    .reply(200, list(c.disks));
}

function build() {
  const metrics = createFunctionMetrics();
  return {
    app: buildGcApp({ kube: testKube(), log: testLog('test'), metrics, now: () => NOW }),
    metrics,
  };
}

/**
 * Two pools. `runners` (ci) keeps 1 free cache disk warm, ttl 30m; `other` (ns2) keeps none, ttl 30m.
 * Only `runners-cache-expired` is free beyond keep for longer than ttl.
 */
function cluster(): { pools: VirtualMachinePool[]; vms: unknown[]; disks: VirtualDisk[] } {
  const templates = runnersDiskTemplates().map((t) =>
    t.name === 'cache'
      ? { ...t, reclaim: { onScaleDown: 'Retain' as const, keep: 1, ttl: '30m' } }
      : t,
  );
  const runners = pool({
    replicas: 1,
    virtualDiskTemplates: templates,
    status: {
      intent: {
        bindings: [{ vm: 'runners-new01', template: 'cache', disk: 'runners-cache-bound' }],
      },
    },
  });
  const other = pool({
    name: 'other',
    namespace: 'ns2',
    uid: 'pool-uid-2',
    virtualDiskTemplates: runnersDiskTemplates().map((t) =>
      t.name === 'cache'
        ? { ...t, reclaim: { onScaleDown: 'Retain' as const, keep: 0, ttl: '30m' } }
        : t,
    ),
  });
  const member = vm(runners, 'runners-aaaaa', {
    refs: [
      { kind: 'VirtualDisk', name: 'runners-aaaaa-root' },
      { kind: 'VirtualDisk', name: 'runners-cache-used' },
    ],
  });
  const disks = [
    // Referenced by a live member; a stale free-since stamp does not make it free.
    disk(runners, 'runners-cache-used', { freeSince: at(-5 * HOUR), rv: '11' }),
    // Bound by the pool's recorded intent.
    disk(runners, 'runners-cache-bound', { freeSince: at(-4 * HOUR), rv: '12' }),
    // The most recently freed: the one warm disk keep=1 holds, though older than ttl.
    disk(runners, 'runners-cache-warm', { freeSince: at(-2 * HOUR), rv: '13' }),
    // Beyond keep and free for 3h > 30m: the only one to go.
    disk(runners, 'runners-cache-expired', {
      freeSince: at(-3 * HOUR),
      rv: '14',
      uid: 'uid-expired',
    }),
    // Not stamped free: never considered.
    disk(runners, 'runners-cache-unstamped', { rv: '15' }),
    // The member's Delete-policy disk.
    disk(runners, 'runners-aaaaa-root', { template: 'root', owner: member, rv: '16' }),
    // keep=0, but free for only 10 minutes.
    disk(other, 'other-cache-fresh', { freeSince: at(-10 * MINUTE), rv: '17' }),
  ];
  return { pools: [runners, other], vms: [member], disks };
}

const unmatched = guardNock();

describe('disk-gc-tick', () => {
  it('lists every pool and every pool disk, then the VMs of the namespace with a disk due, deletes only the expired disk beyond keep → 202', async () => {
    const c = cluster();
    const methods: string[] = [];
    let deleteBody: unknown;
    let event: { reason?: string; note?: string } = {};
    const scope = passLists(c, c.pools)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(EVERY_VM)
      .reply(200, list(c.vms))
      .delete(`${BASE}/namespaces/ci/virtualdisks/runners-cache-expired`, (body: unknown) => {
        deleteBody = body;
        return true;
      })
      .query(true)
      .reply(200, statusBody(200, ''))
      .post(eventsPath('ci'), (body: { reason?: string; note?: string }) => {
        event = body;
        return true;
      })
      .reply(201, {});
    scope.on('request', (req: { method: string }) => {
      methods.push(req.method);
    });
    const { app, metrics } = build();
    const res = await app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    scope.done();
    expect(unmatched.seen).toEqual([]);
    // Pools and disks, the VMs of the one namespace with a disk to go, then the delete and its Event.
    expect(methods).toEqual(['GET', 'GET', 'GET', 'DELETE', 'POST']);
    expect(event.reason).toBe('DiskCollected');
    expect(event.note).toContain('free for longer than its template ttl');
    expect(deleteBody).toMatchObject({
      kind: 'DeleteOptions',
      propagationPolicy: 'Background',
      preconditions: { uid: 'uid-expired', resourceVersion: '14' },
    });
    expect(metrics.registry.render()).toMatch(
      /vmpool_actions_total\{[^}]*kind="deleteDisk"[^}]*\} 1/,
    );
  });

  it('a VM outside every pool referencing the expired disk keeps it: no delete → 202', async () => {
    const c = cluster();
    // A detached member (no pool-uid label, no controller) still mounts the disk.
    const detached = vm(c.pools[0]!, 'runners-detch', {
      refs: [{ kind: 'VirtualDisk', name: 'runners-cache-expired' }],
    });
    detached.metadata.labels = {};
    detached.metadata.ownerReferences = [];
    const scope = passLists(c, c.pools)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(EVERY_VM)
      .reply(200, list([...c.vms, detached]));
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    // No DELETE was asked for (guardNock records any request nock did not expect).
    expect(unmatched.seen).toEqual([]);
  });

  it('a paused pool loses none of its expired disks: its pools and disks listed, nothing else → 202', async () => {
    const c = cluster();
    const pools = c.pools.map((p) => ({ ...p, spec: { ...p.spec, paused: true } }));
    // Nothing is due, so no VM is read either.
    const scope = passLists(c, pools);
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('accepts a structured-mode tick as well', async () => {
    const scope = passLists({ disks: [] }, []);
    const res = await build().app.request('/', structuredEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a delete answering 409 (the disk changed since the list) is not an error → 202', async () => {
    const c = cluster();
    const scope = passLists(c, c.pools)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(EVERY_VM)
      .reply(200, list(c.vms))
      .delete(`${BASE}/namespaces/ci/virtualdisks/runners-cache-expired`)
      .query(true)
      .reply(
        409,
        statusBody(
          409,
          'Conflict',
          'Precondition failed: ResourceVersion in precondition: 14, ResourceVersion in object meta: 15',
        ),
      );
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a list that keeps failing → 503 and nothing deleted', async () => {
    const scope = failingList(`${BASE}/virtualmachinepools`, PAGE);
    // The disk list is read beside it.
    const disks = nock(API)
      .get(`${BASE}/virtualdisks`)
      .query(DISKS)
      .reply(200, list(cluster().disks));
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).not.toBeNull();
    scope.done();
    disks.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('the VM list failing after the disk list → 503 and nothing deleted', async () => {
    const c = cluster();
    const failing = nock(API)
      .get(`${BASE}/namespaces/ci/virtualmachines`)
      .query(true)
      .times(3)
      .reply(503, statusBody(503, 'ServiceUnavailable'));
    const scope = passLists(c, c.pools.slice(0, 1));
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(503);
    failing.done();
    scope.done();
    // No DELETE was asked for (guardNock records any request nock did not expect).
    expect(unmatched.seen).toEqual([]);
  });

  /**
   * `cluster()` plus, in `other`, a disk free past its ttl and a member VM of `other` (not
   * referencing it) whose spec is `spec`.
   */
  function clusterWithOtherMember(spec: Record<string, unknown>) {
    const c = cluster();
    const other = c.pools[1]!;
    const member = vm(other, 'other-aaaaa', {
      refs: [{ kind: 'VirtualDisk', name: 'other-aaaaa-root' }],
    });
    const expired = disk(other, 'other-cache-expired', {
      freeSince: at(-3 * HOUR),
      rv: '18',
      uid: 'uid-other-expired',
    });
    return {
      ...c,
      vms: [...c.vms, { ...member, spec: { ...member.spec, ...spec } }],
      disks: [...c.disks, expired],
    };
  }

  /** Interceptors of the three lists of `c`, and of the deletes (each with its Event) of `gone`. */
  function pass(
    c: ReturnType<typeof cluster>,
    gone: readonly [string, string][],
    read: readonly string[] = gone.map(([n]) => n),
  ): nock.Scope {
    let scope = passLists(c, c.pools);
    // Where something would be collected, every VM of the namespace is read.
    for (const ns of new Set(read))
      scope = scope
        .get(`${BASE}/namespaces/${ns}/virtualmachines`)
        .query(EVERY_VM)
        .reply(200, list(c.vms.filter((v) => (v as VirtualMachine).metadata.namespace === ns)));
    for (const [ns, name] of gone)
      scope = scope
        .delete(`${BASE}/namespaces/${ns}/virtualdisks/${name}`)
        .query(true)
        .reply(200, statusBody(200, ''))
        .post(eventsPath(ns))
        .reply(201, {});
    return scope;
  }

  it('a VM whose bootOrder is above int32 (the CRD says only minimum 1) is read like any other → 202', async () => {
    const c = clusterWithOtherMember({
      blockDeviceRefs: [{ kind: 'VirtualDisk', name: 'other-aaaaa-root', bootOrder: 2 ** 40 }],
    });
    const scope = pass(c, [
      ['ci', 'runners-cache-expired'],
      ['ns2', 'other-cache-expired'],
    ]);
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it("a VM that does not parse keeps only its own pool's disks; every other pool is collected → 202", async () => {
    // A runPolicy only a newer platform knows: the model refuses it, the served schema may not.
    const c = clusterWithOtherMember({ runPolicy: 'SomeFutureMode' });
    const scope = pass(c, [['ci', 'runners-cache-expired']], ['ci', 'ns2']);
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    // other-cache-expired is past its ttl but the VM vmpool could not read may reference it.
    expect(unmatched.seen).toEqual([]);
  });

  it('a VM that does not parse and claims no pool still keeps the disks it names → 202', async () => {
    const c = clusterWithOtherMember({});
    const runners = c.pools[0]!;
    const stray = vm(runners, 'stray', {
      labels: { [keys.poolUid]: 'no-such-pool' },
      refs: [{ kind: 'VirtualDisk', name: 'runners-cache-expired' }],
    });
    const unreadable = {
      ...stray,
      metadata: { ...stray.metadata, ownerReferences: [] },
      spec: { ...stray.spec, runPolicy: 'SomeFutureMode' },
    };
    // Only other's expired disk goes: the one the unreadable VM names stays, though past its ttl.
    // It claims no pool: it is found because the namespace's every VM is read.
    const scope = pass(
      { ...c, vms: [...c.vms, unreadable] },
      [['ns2', 'other-cache-expired']],
      ['ci', 'ns2'],
    );
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a VM whose disk references cannot be read at all keeps every pool of its namespace → 202', async () => {
    const c = clusterWithOtherMember({});
    const other = c.pools[1]!;
    const stray = vm(other, 'stray', { labels: { [keys.poolUid]: 'no-such-pool' } });
    const unreadable = {
      ...stray,
      metadata: { ...stray.metadata, ownerReferences: [] },
      spec: { ...stray.spec, blockDeviceRefs: 'other-cache-expired' },
    };
    const scope = pass(
      { ...c, vms: [...c.vms, unreadable] },
      [['ci', 'runners-cache-expired']],
      ['ci', 'ns2'],
    );
    const res = await build().app.request('/', binaryEvent(PING));
    expect(res.status).toBe(202);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a non-ping event → 400 without an API call', async () => {
    const res = await build().app.request(
      '/',
      binaryEvent(
        'dev.knative.apiserver.ref.update',
        ref('VirtualDisk', 'ci', 'runners-cache-expired', 'virtualization.deckhouse.io/v1alpha2'),
      ),
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toContain(PING);
    expect(unmatched.seen).toEqual([]);
  });

  it('a malformed event → 400', async () => {
    const res = await build().app.request('/', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-type': PING },
      body: '',
    });
    expect(res.status).toBe(400);
  });
});
