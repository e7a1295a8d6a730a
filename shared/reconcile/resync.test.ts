import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../api/index.js';
import { keys, malformedOf } from '../api/index.js';
import { plan } from '../domain/index.js';
import type { ReconcileDeps } from './converge.js';
import { reconcileScope } from './resync.js';
import { WINDOW, WINDOW_OBJECTS, WINDOW_PAGE, objectsOf } from './window.js';
import {
  NOW,
  pool,
  runnersVmTemplate,
  seededRandom,
  steady,
  vm,
} from '../../test/unit/builders.js';
import { fail, fakeKube, ok, plainArgs } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';

/** A converged pool of `n` members: its status is what a reconcile of it would store. */
function converged(name: string, uid: string, n: number) {
  const p0 = pool({ name, uid, replicas: n });
  const members = Array.from({ length: n }, (_, i) => steady(p0, `${name}-m${i}`));
  const vms = members.map((m) => m.vm);
  const disks = members.flatMap((m) => m.disks);
  const status = plan({ pool: p0, vms, disks }, NOW, seededRandom(1)).status;
  const p: VirtualMachinePool = { ...p0, status };
  expect(plan({ pool: p, vms, disks }, NOW, seededRandom(1))).toMatchObject({
    actions: [],
    writeStatus: false,
  });
  return { p, vms, disks };
}

describe('reconcileScope over many pools', () => {
  const deps = (kube: ReconcileDeps['kube']): ReconcileDeps => ({
    kube,
    now: () => NOW,
    rand: seededRandom(2),
    log: testLog('resync'),
    sleep: () => Promise.resolve(),
  });

  it('converged pools cost one list per resource type and no write', async () => {
    const worlds = [
      converged('a', 'uid-a', 2),
      converged('b', 'uid-b', 3),
      converged('c', 'uid-c', 0),
    ];
    const f = fakeKube({
      listPools: () => ok(worlds.map((w) => w.p)),
      listVms: () => ok(worlds.flatMap((w) => w.vms)),
      listDisks: () => ok(worlds.flatMap((w) => w.disks)),
    });
    const out = await reconcileScope(deps(f.kube), { kind: 'all' });
    expect(out.map((o) => [o.pool, o.outcome.kind])).toEqual([
      ['ci/a', 'converged'],
      ['ci/b', 'converged'],
      ['ci/c', 'converged'],
    ]);
    expect(f.calls.map((c) => c.method).sort()).toEqual([
      'listClaims',
      'listDisks',
      'listPools',
      'listVms',
    ]);
    // One window in one namespace: its pools' objects, there.
    expect(f.of('listVms')[0]?.args).toEqual([
      'ci',
      `${keys.poolUid} in (uid-a,uid-b,uid-c)`,
      WINDOW_PAGE,
    ]);
    expect(plainArgs(f.of('listPools')[0]!)).toEqual([undefined, { limit: WINDOW }]);
  });

  it('a pool the lists show short of members is reconciled on its own reads', async () => {
    const a = converged('a', 'uid-a', 2);
    const b = converged('b', 'uid-b', 2);
    // b lost a member since its status was written.
    const bLeft = { vms: b.vms.slice(1), disks: b.disks.slice(2) };
    const reconciled: string[] = [];
    const f = fakeKube({
      listPools: () => ok([a.p, b.p]),
      listVms: () => ok([...a.vms, ...bLeft.vms]),
      listDisks: () => ok([...a.disks, ...bLeft.disks]),
    });
    const out = await reconcileScope(
      deps(f.kube),
      { kind: 'namespace', namespace: 'ci' },
      (_d, ns, name) => {
        reconciled.push(`${ns}/${name}`);
        return Promise.resolve({ kind: 'converged', passes: 2, actions: 3 });
      },
    );
    expect(reconciled).toEqual(['ci/b']);
    expect(out.find((o) => o.pool === 'ci/b')?.outcome).toEqual({
      kind: 'converged',
      passes: 2,
      actions: 3,
    });
    expect(f.of('listVms')[0]?.args).toEqual([
      'ci',
      `${keys.poolUid} in (uid-a,uid-b)`,
      WINDOW_PAGE,
    ]);
  });

  it('members are matched to pools by namespace and pool uid, not by name', async () => {
    const a = converged('a', 'uid-a', 1);
    // Same pool name and uid label in another namespace: not a's member.
    const stray = { ...a.vms[0]!, metadata: { ...a.vms[0]!.metadata, namespace: 'other' } };
    const reconciled: string[] = [];
    const f = fakeKube({
      listPools: () => ok([a.p]),
      listVms: () => ok([stray]),
      listDisks: () => ok(a.disks),
    });
    await reconcileScope(deps(f.kube), { kind: 'all' }, (_d, ns, name) => {
      reconciled.push(`${ns}/${name}`);
      return Promise.resolve({ kind: 'converged', passes: 1, actions: 1 });
    });
    expect(reconciled).toEqual(['ci/a']);
  });

  it('without the member lists every pool is reconciled on its own; without pools, a retry', async () => {
    const a = converged('a', 'uid-a', 1);
    const reconciled: string[] = [];
    const f = fakeKube({ listPools: () => ok([a.p]), listDisks: () => fail('transient') });
    await reconcileScope(deps(f.kube), { kind: 'all' }, (_d, ns, name) => {
      reconciled.push(`${ns}/${name}`);
      return Promise.resolve({ kind: 'converged', passes: 1, actions: 0 });
    });
    expect(reconciled).toEqual(['ci/a']);
    const g = fakeKube({ listPools: () => fail('transient', 'etcd timeout') });
    expect(await reconcileScope(deps(g.kube), { kind: 'all' })).toEqual([
      { pool: '*', outcome: { kind: 'retry', reason: 'etcd timeout' } },
    ]);
  });

  it('only the pool an unreadable object claims is blocked; every other pool is planned and reconciled', async () => {
    const a = converged('a', 'uid-a', 1);
    const b = converged('b', 'uid-b', 1);
    const c = converged('c', 'uid-c', 1);
    // a lost its member: it must be reconciled. b's member no longer parses. c's disk claims c
    // only through its controller, a member of c (its label names no pool that exists).
    const bMember = vm(b.p, 'b-m0');
    const cDisk = malformedOf(
      'VirtualDisk',
      {
        metadata: {
          ...c.disks[0]!.metadata,
          labels: { [keys.poolUid]: 'uid-gone' },
          ownerReferences: [
            {
              apiVersion: 'v',
              kind: 'VirtualMachine',
              name: 'c-m0',
              uid: c.vms[0]!.metadata.uid,
              controller: true,
            },
          ],
        },
      },
      'spec: expected object',
    );
    const f = fakeKube({
      listPools: () => ok([a.p, b.p, c.p]),
      listVms: () => ({
        ok: true,
        value: [...b.vms.slice(1), ...c.vms],
        malformed: [malformedOf('VirtualMachine', bMember, 'spec.runPolicy: Invalid option')],
      }),
      listDisks: () => ({
        ok: true,
        value: [...a.disks, ...b.disks, ...c.disks],
        malformed: [cDisk],
      }),
    });
    const reconciled: string[] = [];
    const out = await reconcileScope(deps(f.kube), { kind: 'all' }, (_d, ns, name) => {
      reconciled.push(`${ns}/${name}`);
      return Promise.resolve({ kind: 'converged', passes: 1, actions: 1 });
    });
    expect(reconciled).toEqual(['ci/a']);
    expect(out.map((o) => [o.pool, o.outcome.kind])).toEqual([
      ['ci/a', 'converged'],
      ['ci/b', 'failed'],
      ['ci/c', 'failed'],
    ]);
    const written = f.of('updatePoolStatus').map((call) => {
      const [p] = call.args as [VirtualMachinePool];
      const synced = p.status?.conditions?.find((x) => x.type === 'Synced');
      return [p.metadata.name, synced?.reason, synced?.message?.split(' claims')[0]];
    });
    expect(written).toEqual([
      ['b', 'MalformedMember', 'VirtualMachine ci/b-m0'],
      ['c', 'MalformedMember', `VirtualDisk ci/${c.disks[0]!.metadata.name ?? ''}`],
    ]);
    expect(f.of('recordEvent')).toHaveLength(2);
    expect(f.of('createVm')).toEqual([]);
    expect(f.of('deleteVm')).toEqual([]);
  });

  it('large pools are cut into windows: each listed once by its own uids, a bad object blocks only its pool', async () => {
    // 900 members with their disks are over half the window budget: a and b never share a window.
    const a = converged('a', 'uid-a', 900);
    const b = converged('b', 'uid-b', 900);
    const c = converged('c', 'uid-c', 1);
    expect(objectsOf(a.p) * 2).toBeGreaterThan(WINDOW_OBJECTS);
    // b's first member no longer parses; c lost its member since its status was written.
    const bMember = vm(b.p, 'b-m0');
    const worlds = [
      { uid: 'uid-a', vms: a.vms, disks: a.disks },
      { uid: 'uid-b', vms: b.vms.slice(1), disks: b.disks },
      { uid: 'uid-c', vms: [], disks: c.disks },
    ];
    const of = (sel: string) => worlds.filter((w) => sel.includes(w.uid));
    const f = fakeKube({
      listPools: () => ok([a.p, b.p, c.p]),
      listVms: ([, sel]) => ({
        ok: true,
        value: of(sel).flatMap((w) => w.vms),
        malformed: sel.includes('uid-b')
          ? [malformedOf('VirtualMachine', bMember, 'spec.runPolicy: Invalid option')]
          : [],
      }),
      listDisks: ([, sel]) => ok(of(sel).flatMap((w) => w.disks)),
    });
    const reconciled: string[] = [];
    const out = await reconcileScope(deps(f.kube), { kind: 'all' }, (_d, ns, name) => {
      reconciled.push(`${ns}/${name}`);
      return Promise.resolve({ kind: 'converged', passes: 1, actions: 1 });
    });
    expect(f.of('listVms').map((call) => call.args[1])).toEqual([
      `${keys.poolUid} in (uid-a)`,
      `${keys.poolUid} in (uid-b,uid-c)`,
    ]);
    expect(f.of('listPools')).toHaveLength(1);
    expect(reconciled).toEqual(['ci/c']);
    expect(out.map((o) => [o.pool, o.outcome.kind])).toEqual([
      ['ci/a', 'converged'],
      ['ci/b', 'failed'],
      ['ci/c', 'converged'],
    ]);
    expect(f.of('deleteVm')).toEqual([]);
    expect(f.of('createVm')).toEqual([]);
  });

  it('a pool whose template nests 2,000 levels deep is planned like any other, in the same tick', async () => {
    const a = converged('a', 'uid-a', 1);
    let deep: unknown = 'bottom';
    for (let i = 0; i < 2_000; i++) deep = { deeper: deep };
    const t = runnersVmTemplate();
    // Stored before admission bounded depth (or with the webhook away); one member short.
    const d = pool({
      name: 'deep',
      uid: 'uid-deep',
      replicas: 1,
      virtualMachineTemplate: { ...t, spec: { ...t.spec, extra: deep } },
    });
    const f = fakeKube({
      listPools: () => ok([d, a.p]),
      listVms: () => ok(a.vms),
      listDisks: () => ok(a.disks),
    });
    const reconciled: string[] = [];
    const out = await reconcileScope(deps(f.kube), { kind: 'all' }, (_d, ns, name) => {
      reconciled.push(`${ns}/${name}`);
      return Promise.resolve({ kind: 'converged', passes: 1, actions: 1 });
    });
    expect(reconciled).toEqual(['ci/deep']);
    expect(out.map((o) => [o.pool, o.outcome.kind])).toEqual([
      ['ci/deep', 'converged'],
      ['ci/a', 'converged'],
    ]);
  });
});
