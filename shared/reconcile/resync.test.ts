import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../api/index.js';
import { keys } from '../api/index.js';
import { plan } from '../domain/index.js';
import type { ReconcileDeps } from './converge.js';
import { reconcileScope } from './resync.js';
import { NOW, pool, seededRandom, steady } from '../../test/unit/builders.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
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
    expect(f.calls.map((c) => c.method).sort()).toEqual(['listDisks', 'listPools', 'listVms']);
    // Cluster-wide, every object vmpool labelled.
    expect(f.of('listVms')[0]?.args).toEqual([undefined, keys.poolUid]);
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
    expect(f.of('listVms')[0]?.args).toEqual(['ci', keys.poolUid]);
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
});
