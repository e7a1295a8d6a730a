import { describe, expect, it } from 'vitest';
import type { SourceEvent, VirtualMachine, VirtualMachinePool } from '../api/index.js';
import type { Kube } from '../kube/index.js';
import type { ReconcileDeps } from './converge.js';
import { reconcilePool } from './converge.js';
import { isOwnWriteReadPast, ownWrites } from './own-writes.js';
import type { OwnWrites } from './own-writes.js';
import { NOW, pool, seededRandom } from '../../test/unit/builders.js';
import { memoryKube } from '../../test/unit/memory-kube.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';

const version = (uid: string, resourceVersion: string) => ({ metadata: { uid, resourceVersion } });
const vm = (name: string, uid: string, resourceVersion: string): VirtualMachine => ({
  apiVersion: 'virtualization.deckhouse.io/v1alpha2',
  kind: 'VirtualMachine',
  metadata: { name, namespace: 'ci', uid, resourceVersion },
  spec: {},
});

function event(verb: string, data: unknown): SourceEvent {
  return {
    specversion: '1.0',
    id: '1',
    source: 'test',
    type: `dev.knative.apiserver.resource.${verb}`,
    data,
  } as SourceEvent;
}

/** A Kube whose creates answer the VM with the uid `uidOf(n)` (n counts from 1) at `resourceVersion`. */
function creating(uidOf: (n: number) => string, resourceVersion: string) {
  let n = 0;
  return fakeKube({
    createVm: ([, v]) =>
      ok({ ...v, metadata: { ...v.metadata, uid: uidOf(++n), resourceVersion } }),
  });
}

describe('ownWrites', () => {
  it('holds a write until a later pass reads past it, then knows that version once', async () => {
    const f = creating(() => 'u1', '7');
    const writes = ownWrites();
    const t = writes.track(f.kube);
    await t.kube.createVm('ci', vm('a', '', ''));
    // Not read past yet: the reconcile could still end without reading it.
    expect(writes.size()).toBe(0);
    t.readsBegin()();
    expect(await writes.readPast(version('u1', '6'))).toBe(false);
    expect(await writes.readPast(version('u2', '7'))).toBe(false);
    expect(await writes.readPast(version('u1', '7'))).toBe(true);
    // A second delivery of the same event is reconciled.
    expect(await writes.readPast(version('u1', '7'))).toBe(false);
  });

  it('a failed write holds nothing; each version an object was written at is known', async () => {
    let rv = 10;
    const f = fakeKube({
      updateVm: ([v]) => ok({ ...v, metadata: { ...v.metadata, resourceVersion: String(++rv) } }),
      updateDisk: () => fail('conflict'),
    });
    const writes = ownWrites();
    const t = writes.track(f.kube);
    await t.kube.updateVm(vm('a', 'u1', '10'));
    await t.kube.updateVm(vm('a', 'u1', '11'));
    await t.kube.updateDisk({ metadata: { name: 'd', uid: 'u9', resourceVersion: '3' } } as never);
    t.readsBegin()();
    expect(writes.size()).toBe(2);
    expect(await writes.readPast(version('u9', '3'))).toBe(false);
    expect(await writes.readPast(version('u1', '10'))).toBe(false);
    expect(await writes.readPast(version('u1', '11'))).toBe(true);
    expect(await writes.readPast(version('u1', '12'))).toBe(true);
  });

  it('forgets the oldest writes beyond its bound', async () => {
    const f = creating((n) => `u${String(n)}`, '1');
    const writes = ownWrites(3);
    const t = writes.track(f.kube);
    for (let i = 0; i < 5; i++) await t.kube.createVm('ci', vm(`v${i}`, '', ''));
    t.readsBegin()();
    expect(writes.size()).toBe(3);
    expect(await writes.readPast(version('u1', '1'))).toBe(false);
    expect(await writes.readPast(version('u2', '1'))).toBe(false);
    expect(await writes.readPast(version('u5', '1'))).toBe(true);
  });

  it('answers adds and updates in Resource mode only: never a delete, a reference or a tick', async () => {
    const f = creating(() => 'u1', '7');
    const writes = ownWrites();
    const t = writes.track(f.kube);
    for (let i = 0; i < 3; i++) await t.kube.createVm('ci', vm('a', '', ''));
    t.readsBegin()();
    const obj = vm('a', 'u1', '7');
    expect(await isOwnWriteReadPast(event('delete', obj), writes)).toBe(false);
    expect(
      await isOwnWriteReadPast(
        {
          ...event('add', { kind: 'VirtualMachine', name: 'a' }),
          type: 'dev.knative.apiserver.ref.add',
        },
        writes,
      ),
    ).toBe(false);
    expect(
      await isOwnWriteReadPast({ ...event('add', obj), type: 'dev.knative.sources.ping' }, writes),
    ).toBe(false);
    expect(await isOwnWriteReadPast(event('update', obj), writes)).toBe(true);
  });
  it('reads the version from the raw event data: without a uid and resourceVersion as strings, false', async () => {
    const f = creating(() => 'u1', '7');
    const writes = ownWrites();
    const t = writes.track(f.kube);
    await t.kube.createVm('ci', vm('a', '', ''));
    t.readsBegin()();
    const add = 'dev.knative.apiserver.resource.add';
    for (const data of [
      undefined,
      'u1@7',
      { metadata: 'u1' },
      { metadata: { uid: 'u1', resourceVersion: 7 } },
    ])
      expect(await isOwnWriteReadPast({ type: add, data }, writes)).toBe(false);
    expect(writes.size()).toBe(1);
    expect(
      await isOwnWriteReadPast(
        { type: add, data: { metadata: { uid: 'u1', resourceVersion: '7' } } },
        writes,
      ),
    ).toBe(true);
  });
  it('an event of a write still held waits: true once read past, false once its reconcile ends', async () => {
    const f = creating((n) => `u${String(n)}`, '1');
    const writes = ownWrites();
    const t = writes.track(f.kube);
    await t.kube.createVm('ci', vm('a', '', ''));
    await t.kube.createVm('ci', vm('b', '', ''));
    const first = writes.readPast(version('u1', '1'));
    let answered = false;
    void first.then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 10));
    expect(answered).toBe(false);
    const readPast = t.readsBegin();
    // A write after the reads began is not covered by them.
    await t.kube.createVm('ci', vm('c', '', ''));
    readPast();
    expect(await first).toBe(true);
    const third = writes.readPast(version('u3', '1'));
    t.end();
    expect(await third).toBe(false);
    expect(await writes.readPast(version('u2', '1'))).toBe(true);
  });
});

/** Reconcile deps over `kube` remembering into `writes`. */
function depsOf(kube: Kube, writes: OwnWrites, maxPasses?: number): ReconcileDeps {
  return {
    kube,
    now: () => NOW,
    rand: seededRandom(1),
    log: testLog('own-writes'),
    sleep: () => Promise.resolve(),
    ownWrites: writes,
    ...(maxPasses === undefined ? {} : { maxPasses }),
  };
}

describe('reconcilePool with ownWrites', () => {
  it("a scale-up remembers its fence and its VMs' creates (not its disks'), read past by the next pass, and its last status write, which settles", async () => {
    const mem = memoryKube({ pool: { ...pool({ replicas: 3 }), status: {} } });
    const writes = ownWrites();
    const fenced: string[] = [];
    const kube: Kube = Object.assign(Object.create(mem.kube) as Kube, {
      updatePoolStatus: async (p: VirtualMachinePool) => {
        const got = await mem.kube.updatePoolStatus(p);
        if (got.ok) fenced.push(got.value.metadata.resourceVersion ?? '');
        return got;
      },
    });
    const d = depsOf(kube, writes);
    expect(await reconcilePool(d, 'ci', 'runners')).toMatchObject({ kind: 'converged' });
    const vms = [...mem.store.vm.values()];
    const disks = [...mem.store.disk.values()];
    expect(vms).toHaveLength(3);
    expect(fenced).toHaveLength(2);
    expect(disks).toHaveLength(6);
    // Every VM as created, and the fence: the second pass read past them. A disk's create is not
    // remembered: the watch Trigger drops its add, so nothing would ever take it out of the memory.
    for (const o of vms) expect(await writes.readPast(o), o.metadata.name).toBe(true);
    for (const o of disks) expect(await writes.readPast(o), o.metadata.name).toBe(false);
    const p = mem.store.pool.get('runners');
    expect(await writes.readPast(version(String(p?.metadata.uid), fenced[0] ?? ''))).toBe(true);
    // The last status write ended the reconcile; planned again from it, the pool asks for nothing.
    expect(p?.metadata.resourceVersion).toBe(fenced[1]);
    expect(await writes.readPast(p as never)).toBe(true);
    expect(writes.size()).toBe(0);
  });

  it('a reconcile whose next pass cannot read (a crash, a lost API server) remembers nothing', async () => {
    const mem = memoryKube({ pool: { ...pool({ replicas: 2 }), status: {} } });
    let creates = 0;
    // Once the creates are done, every read fails: the reconcile ends without reading past them.
    const kube: Kube = Object.assign(Object.create(mem.kube) as Kube, {
      createVm: async (ns: string, v: VirtualMachine) => {
        creates++;
        return mem.kube.createVm(ns, v);
      },
      getPool: async (ns: string, name: string) =>
        creates > 0 ? fail('transient', 'connection refused') : mem.kube.getPool(ns, name),
    });
    const writes = ownWrites();
    const d = depsOf(kube, writes, 3);
    expect(await reconcilePool(d, 'ci', 'runners')).toMatchObject({ kind: 'retry' });
    expect(mem.store.vm.size).toBe(2);
    // Nothing read the creates: their events are reconciled, not answered as read past.
    expect(writes.size()).toBe(0);
    for (const o of mem.store.vm.values()) expect(await writes.readPast(o)).toBe(false);
  });

  it('a pass whose reads fail keeps the writes held; the next pass that reads remembers them', async () => {
    const mem = memoryKube({ pool: { ...pool({ replicas: 2 }), status: {} } });
    let creates = 0;
    let refused = 0;
    const kube: Kube = Object.assign(Object.create(mem.kube) as Kube, {
      createVm: async (ns: string, v: VirtualMachine) => {
        creates++;
        return mem.kube.createVm(ns, v);
      },
      listDisks: async (...args: Parameters<Kube['listDisks']>) =>
        creates > 0 && refused++ === 0
          ? fail('transient', 'etcd timeout')
          : mem.kube.listDisks(...args),
    });
    const writes = ownWrites();
    const d = depsOf(kube, writes);
    expect(await reconcilePool(d, 'ci', 'runners')).toMatchObject({ kind: 'converged' });
    expect(refused).toBeGreaterThan(1);
    for (const o of mem.store.vm.values()) expect(await writes.readPast(o)).toBe(true);
  });
});
