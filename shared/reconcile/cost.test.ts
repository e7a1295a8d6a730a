/**
 * What a reconcile costs in API requests, counted call by call on a miniature API server: a
 * scale-up by k makes k×(1+disks) creates and one fencing write, a scale-down by k makes k deletes
 * and one fencing write (then the freed Retain disks are stamped), and the passes the new objects'
 * events bring write nothing until the platform changes something.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualDisk, VirtualMachine } from '../api/index.js';
import { keys } from '../api/index.js';
import { reconcilePool } from './converge.js';
import type { ReconcileDeps } from './converge.js';
import { NOW, pool, seededRandom } from '../../test/unit/builders.js';
import type { Call } from '../../test/unit/fake-kube.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import { converge, scale } from '../../test/unit/world.js';
import type { World } from '../../test/unit/world.js';
import { testLog } from '../../test/logs.js';

const READS = new Set(['getPool', 'listVms', 'listDisks', 'getVm']);
const DISKS_PER_MEMBER = 2;

/**
 * A pool's namespace as the API server keeps it: creates get a uid and no status, a delete removes
 * the VM and (as the garbage collector does) its own disks, unless `finalizers` hold it Terminating.
 */
function server(start: World, finalizers = false) {
  const w = { ...start };
  let rv = 100;
  const uid = (name: string) => `uid-${name}-${rv}`;
  const f = fakeKube({
    getPool: () => ok(w.pool),
    listVms: () => ok(w.vms),
    listDisks: () => ok(w.disks),
    updatePoolStatus: ([next]) => {
      w.pool = { ...next, metadata: { ...next.metadata, resourceVersion: String(++rv) } };
      return ok(w.pool);
    },
    createVm: ([, vm]) => {
      if (w.vms.some((v) => v.metadata.name === vm.metadata.name)) return fail('alreadyExists');
      const meta = { ...vm.metadata, uid: uid(vm.metadata.name ?? '') };
      const made: VirtualMachine = {
        ...vm,
        metadata: finalizers ? { ...meta, finalizers: ['sim'] } : meta,
      };
      w.vms = [...w.vms, made];
      return ok(made);
    },
    createDisk: ([, d]) => {
      const made: VirtualDisk = {
        ...d,
        metadata: { ...d.metadata, uid: uid(d.metadata.name ?? '') },
      };
      w.disks = [...w.disks, made];
      return ok(made);
    },
    updateDisk: ([d]) => {
      w.disks = w.disks.map((x) => (x.metadata.name === d.metadata.name ? d : x));
      return ok(d);
    },
    updateVm: ([vm]) => {
      w.vms = w.vms.map((x) => (x.metadata.name === vm.metadata.name ? vm : x));
      return ok(vm);
    },
    deleteVm: ([, name]) => {
      if (finalizers)
        w.vms = w.vms.map((v) =>
          v.metadata.name === name
            ? { ...v, metadata: { ...v.metadata, deletionTimestamp: '2025-01-01T12:00:00Z' } }
            : v,
        );
      else gone(name);
      return ok(undefined);
    },
  });
  const gone = (name: string) => {
    const vm = w.vms.find((v) => v.metadata.name === name);
    w.vms = w.vms.filter((v) => v !== vm);
    w.disks = w.disks.filter(
      (d) => !(d.metadata.ownerReferences ?? []).some((r) => r.uid === vm?.metadata.uid),
    );
  };
  const deps: ReconcileDeps = {
    kube: f.kube,
    now: () => NOW,
    rand: seededRandom(7),
    log: testLog('cost'),
    sleep: () => Promise.resolve(),
  };
  /** One reconcile and the calls it made, by method; `writes` leaves reads and Events out. */
  const reconcile = async () => {
    const from = f.calls.length;
    const out = await reconcilePool(deps, 'ci', 'runners');
    const calls: Call[] = f.calls.slice(from);
    const by: Record<string, number> = {};
    for (const c of calls) by[c.method] = (by[c.method] ?? 0) + 1;
    const writes = calls.filter((c) => !READS.has(c.method) && c.method !== 'recordEvent');
    return {
      out,
      by,
      reads: calls.filter((c) => READS.has(c.method)).length,
      writes: writes.length,
    };
  };
  /** The platform starts every member without a phase; a finalizer held by it goes. */
  const platform = () => {
    w.vms = w.vms.map((v) =>
      v.status?.phase === undefined ? { ...v, status: { ...v.status, phase: 'Running' } } : v,
    );
  };
  const release = () => {
    for (const v of w.vms.filter((x) => x.metadata.deletionTimestamp !== undefined))
      gone(v.metadata.name ?? '');
  };
  return { w, reconcile, platform, release };
}

/** A converged pool of `n` replicas (the plans of the in-memory world), at `replicas` now. */
function at(n: number, replicas: number, finalizers = false) {
  const { w } = converge({ pool: pool({ replicas: n }), vms: [], disks: [] }, NOW);
  return server(scale(w, replicas), finalizers);
}

const retained = (w: { disks: VirtualDisk[] }) =>
  w.disks.filter((d) => d.metadata.annotations?.[keys.freeSince] !== undefined).length;

describe('writes per object', () => {
  it.each([1, 3])('a scale-up by %i: k×(1+disks) creates and one fencing write', async (k) => {
    const s = at(4, 4 + k);
    const first = await s.reconcile();
    expect(first.out).toMatchObject({ kind: 'converged', passes: 1, actions: k * 3 });
    expect(first.reads).toBe(3);
    expect(first.by).toMatchObject({
      updatePoolStatus: 1,
      createVm: k,
      createDisk: k * DISKS_PER_MEMBER,
    });
    expect(first.writes).toBe(k * (1 + DISKS_PER_MEMBER) + 1);
    // The creates' events bring a pass: the fenced status was already right.
    const next = await s.reconcile();
    expect(next.writes).toBe(0);
    expect(s.w.pool.status).toMatchObject({ replicas: 4 + k, readyReplicas: 4 });
    // The platform starts them: that pass writes readyReplicas and drops the realized intent.
    s.platform();
    const started = await s.reconcile();
    expect(started.by).toEqual({ getPool: 1, listVms: 1, listDisks: 1, updatePoolStatus: 1 });
    expect(s.w.pool.status?.readyReplicas).toBe(4 + k);
    expect(s.w.pool.status?.intent).toBeUndefined();
    expect((await s.reconcile()).writes).toBe(0);
  });

  it.each([1, 3])(
    'a scale-down by %i: k deletes and one fencing write, then the freed disks are stamped',
    async (k) => {
      const s = at(5, 5 - k);
      const first = await s.reconcile();
      expect(first.reads).toBe(3);
      expect(first.by).toMatchObject({ updatePoolStatus: 1, deleteVm: k });
      expect(first.writes).toBe(k + 1);
      expect(s.w.pool.status?.replicas).toBe(5 - k);
      // Disk bookkeeping: each freed Retain disk stamped free-since; no status write.
      const next = await s.reconcile();
      expect(next.by).toEqual({ getPool: 1, listVms: 1, listDisks: 1, updateDisk: k });
      expect(retained(s.w)).toBe(k);
      expect((await s.reconcile()).writes).toBe(0);
    },
  );

  it('a scale-down by 2 behind a finalizer: Terminating costs the disk stamps, the departure one status write', async () => {
    const s = at(5, 3, true);
    // The members of `converge` carry no finalizer; give them the platform's.
    s.w.vms = s.w.vms.map((v) => ({ ...v, metadata: { ...v.metadata, finalizers: ['sim'] } }));
    const first = await s.reconcile();
    expect(first.by).toMatchObject({ updatePoolStatus: 1, deleteVm: 2 });
    expect(first.writes).toBe(3);
    // Terminating: the disks they free are stamped (disk bookkeeping); the status was right already.
    const held = await s.reconcile();
    expect(held.by).toEqual({ getPool: 1, listVms: 1, listDisks: 1, updateDisk: 2 });
    expect(s.w.pool.status).toMatchObject({ replicas: 5, readyReplicas: 3 });
    // The finalizer goes: the replicas change, and that write drops the realized intent.
    s.release();
    const gone = await s.reconcile();
    expect(gone.by).toEqual({ getPool: 1, listVms: 1, listDisks: 1, updatePoolStatus: 1 });
    expect(s.w.pool.status).toMatchObject({ replicas: 3, readyReplicas: 3 });
    expect(s.w.pool.status?.intent).toBeUndefined();
    expect((await s.reconcile()).writes).toBe(0);
  });
});
