import { describe, expect, it } from 'vitest';
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../api/index.js';
import type { ReconcileDeps } from './converge.js';
import { reconcilePool } from './converge.js';
import { keys } from '../api/index.js';
import { withTargets } from '../domain/index.js';
import { HOUR, MINUTE, NOW, at, pool, seededRandom, steady } from '../../test/unit/builders.js';
import { memoryKube } from '../../test/unit/memory-kube.js';
import type { Script } from '../../test/unit/fake-kube.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';

const noSleep = () => Promise.resolve();

function deps(script: Script, p: VirtualMachinePool | undefined, maxPasses = 3) {
  const f = fakeKube(script, p);
  const d: ReconcileDeps = {
    kube: f.kube,
    now: () => NOW,
    rand: seededRandom(1),
    log: testLog('converge'),
    maxPasses,
    sleep: noSleep,
  };
  return { f, d };
}

/** A pool of `replicas` whose listed members are `members` (status as a converged reconcile leaves it). */
function world(
  replicas: number,
  names: string[],
): { p: VirtualMachinePool; vms: VirtualMachine[] } {
  const p = pool({ replicas });
  return { p, vms: names.map((n) => steady(p, n).vm) };
}

describe('reconcilePool: every outcome of the funnel', () => {
  it('a pool that is gone (or goes during the status write) is reported gone', async () => {
    expect(await reconcilePool(deps({}, undefined).d, 'ci', 'runners')).toEqual({ kind: 'gone' });
    const { p } = world(1, []);
    const { d } = deps({ updatePoolStatus: () => fail('notFound') }, p);
    expect(await reconcilePool(d, 'ci', 'runners')).toEqual({ kind: 'gone' });
  });

  it('transient read failures outlast the passes: retry, naming the last reason', async () => {
    const { p } = world(1, []);
    const { f, d } = deps({ listVms: () => fail('transient', 'etcd timeout') }, p);
    const out = await reconcilePool(d, 'ci', 'runners');
    expect(out).toEqual({ kind: 'retry', reason: 'etcd timeout' });
    expect(f.of('getPool')).toHaveLength(3);
    expect(f.of('createVm')).toEqual([]);
  });

  it('records the intent before creating, then converges on the next pass', async () => {
    const { p } = world(1, []);
    let stored: VirtualMachinePool = p;
    const created: VirtualMachine[] = [];
    const disks: VirtualDisk[] = [];
    const { f, d } = deps(
      {
        getPool: () => ok(stored),
        updatePoolStatus: ([next]) => {
          stored = { ...next, metadata: { ...next.metadata, resourceVersion: 'next' } };
          return ok(stored);
        },
        createVm: ([, vm]) => {
          const m = { ...vm, metadata: { ...vm.metadata, uid: `uid-${vm.metadata.name ?? ''}` } };
          created.push(m);
          return ok(m);
        },
        listVms: () => ok(created),
        createDisk: ([, disk]) => {
          disks.push(disk);
          return ok(disk);
        },
        listDisks: () => ok(disks),
      },
      p,
    );
    const out = await reconcilePool(d, 'ci', 'runners');
    expect(out).toMatchObject({ kind: 'converged', actions: 3 });
    const order = f.calls.map((c) => c.method).filter((m) => m !== 'recordEvent');
    expect(order.indexOf('updatePoolStatus')).toBeLessThan(order.indexOf('createVm'));
    expect(stored.status?.intent).toBeUndefined();
  });

  it('a lost race on the fence (409) re-reads and re-plans instead of acting', async () => {
    const { p } = world(1, []);
    const { f, d } = deps({ updatePoolStatus: () => fail('conflict') }, p);
    const out = await reconcilePool(d, 'ci', 'runners');
    expect(out.kind).toBe('retry');
    expect(f.of('updatePoolStatus')).toHaveLength(3);
    expect(f.of('createVm')).toEqual([]);
  });

  it.each(['invalid', 'forbidden'] as const)(
    'a fence write answered %s fails the pool and acts on nothing',
    async (reason) => {
      const { p } = world(1, []);
      const { f, d } = deps({ updatePoolStatus: () => fail(reason) }, p);
      const out = await reconcilePool(d, 'ci', 'runners');
      expect(out).toMatchObject({ kind: 'failed', failures: [{ reason }] });
      expect(f.of('createVm')).toEqual([]);
    },
  );

  it('a converged pool costs four reads (pool, VMs, disks, claims) and no write', async () => {
    const { p, vms } = world(2, ['runners-aaaaa', 'runners-bbbbb']);
    const disks = vms.flatMap((v) => steady(p, v.metadata.name ?? '').disks);
    const first = deps({ listVms: () => ok(vms), listDisks: () => ok(disks) }, p);
    await reconcilePool(first.d, 'ci', 'runners');
    const written = first.f.of('updatePoolStatus')[0]?.args[0] as VirtualMachinePool;
    const { f, d } = deps({ listVms: () => ok(vms), listDisks: () => ok(disks) }, written);
    expect(await reconcilePool(d, 'ci', 'runners')).toEqual({
      kind: 'converged',
      passes: 1,
      actions: 0,
    });
    expect(f.calls.map((c) => c.method).sort()).toEqual([
      'getPool',
      'listClaims',
      'listDisks',
      'listVms',
    ]);
  });

  it('a permanent action failure is reported as failed after the pass', async () => {
    const { p } = world(1, []);
    const { d } = deps({ createVm: () => fail('invalid', 'bad template') }, p);
    const out = await reconcilePool(d, 'ci', 'runners');
    expect(out).toMatchObject({ kind: 'failed', failures: [{ message: 'bad template' }] });
  });

  it('a name a foreign VM holds is not recorded again on the next pass', async () => {
    const { p } = world(1, []);
    let stored: VirtualMachinePool = p;
    const stranger = (name: string): VirtualMachine => {
      const v = steady(p, name).vm;
      v.metadata.ownerReferences = [];
      return v;
    };
    const { f, d } = deps(
      {
        getPool: () => ok(stored),
        updatePoolStatus: ([next]) => ok((stored = next)),
        createVm: ([, vm], nth) => (nth === 0 ? fail('alreadyExists') : ok(vm)),
        getVm: ([, name]) => ok(stranger(name)),
      },
      p,
    );
    await reconcilePool(d, 'ci', 'runners');
    const [first, second] = f
      .of('createVm')
      .map((c) => (c.args[1] as VirtualMachine).metadata.name);
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(stored.status?.intent?.creates ?? []).not.toContain(first);
  });
});

describe('L7: a member protected after the read is never deleted on the stale decision', () => {
  const protect = (v: VirtualMachine): VirtualMachine => ({
    ...v,
    metadata: {
      ...v.metadata,
      annotations: { ...v.metadata.annotations, [keys.protected]: 'true' },
    },
  });
  const member = (p: VirtualMachinePool, name: string, o: Parameters<typeof steady>[2] = {}) =>
    steady(p, name, {
      created: at(-HOUR * (name.endsWith('a') ? 3 : name.endsWith('b') ? 2 : 1)),
      ...o,
    });
  const three = (p: VirtualMachinePool) =>
    ['runners-aaaaa', 'runners-bbbbb', 'runners-ccccc'].map((n) => member(p, n));

  /** Each delete path, set up so that its decision removes `victim`. */
  const paths: Array<{
    path: string;
    seed: () => { pool: VirtualMachinePool; vms: VirtualMachine[]; disks: VirtualDisk[] };
    victim: string;
  }> = [
    {
      path: 'a policy victim of a scale-down',
      victim: 'runners-ccccc',
      seed: () => {
        const p = pool({ replicas: 2 });
        const m = three(p);
        return { pool: p, vms: m.map((x) => x.vm), disks: m.flatMap((x) => x.disks) };
      },
    },
    {
      path: 'a scaledownwith target',
      victim: 'runners-aaaaa',
      seed: () => {
        const p = withTargets(pool({ replicas: 2 }), [
          { name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' },
        ]);
        const m = three(p);
        return { pool: p, vms: m.map((x) => x.vm), disks: m.flatMap((x) => x.disks) };
      },
    },
    {
      path: 'healing',
      victim: 'runners-ccccc',
      seed: () => {
        const p = pool({ replicas: 3 });
        p.spec.healing = { startupTimeout: '5m' };
        const m = three(p);
        const stuck = m[2]!.vm;
        stuck.status = { ...stuck.status, phase: 'Starting', stats: { phasesTransitions: [] } };
        return { pool: p, vms: m.map((x) => x.vm), disks: m.flatMap((x) => x.disks) };
      },
    },
    {
      path: 'maxMemberAge',
      victim: 'runners-aaaaa',
      seed: () => {
        const p = pool({ replicas: 3 });
        p.spec.maxMemberAge = '150m';
        const m = three(p);
        return { pool: p, vms: m.map((x) => x.vm), disks: m.flatMap((x) => x.disks) };
      },
    },
    {
      path: 'a surplus standby member',
      victim: 'runners-ccccc',
      seed: () => {
        const p = pool({ replicas: 1 });
        p.spec.standby = { replicas: 1, state: 'Stopped' };
        const m = three(p);
        for (const x of m.slice(1)) {
          x.vm.metadata.labels = { ...x.vm.metadata.labels, [keys.standby]: 'true' };
          x.vm.spec = { ...x.vm.spec, runPolicy: 'AlwaysOff' };
          x.vm.status = { ...x.vm.status, phase: 'Stopped' };
        }
        return { pool: p, vms: m.map((x) => x.vm), disks: m.flatMap((x) => x.disks) };
      },
    },
    {
      path: 'the delete after drained',
      victim: 'runners-ccccc',
      seed: () => {
        const p = pool({
          replicas: 2,
          status: { intent: { deletes: [{ name: 'runners-ccccc', uid: 'uid-runners-ccccc' }] } },
        });
        p.spec.scaleDown = { drainTimeout: '10m' };
        const m = three(p);
        m[2] = member(p, 'runners-ccccc', {
          annotations: { [keys.drainRequested]: at(-MINUTE), [keys.drained]: 'true' },
        });
        return { pool: p, vms: m.map((x) => x.vm), disks: m.flatMap((x) => x.disks) };
      },
    },
  ];

  it.each(paths)(
    '$path: the delete answers 409 and the re-plan keeps it',
    async ({ seed, victim }) => {
      let raced = false;
      const mem = memoryKube(seed(), (l, m) => {
        // The runner takes a job and protects itself between the reconcile's read and its delete.
        if (l.method === 'deleteVm' && l.name === victim && !raced) {
          raced = true;
          m.touch<VirtualMachine>('vm', victim, protect);
        }
      });
      const d: ReconcileDeps = {
        kube: mem.kube,
        now: () => NOW,
        rand: seededRandom(1),
        log: testLog('converge'),
        sleep: noSleep,
      };
      await reconcilePool(d, 'ci', 'runners');
      expect(raced).toBe(true);
      expect(mem.conflicts).toContain(`deleteVm ${victim}`);
      expect(mem.writes).not.toContain(`deleteVm ${victim}`);
      expect(mem.store.vm.get(victim)?.metadata.annotations?.[keys.protected]).toBe('true');
    },
  );
});
