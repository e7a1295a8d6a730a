/**
 * When a reconcile reads the claims: always for a claim's event or a resync window that read them;
 * for any other event only when the pool's status says a claim may need it (pendingClaims,
 * claimedReplicas, a recorded binding, or absent counts) or a member turns out to be marked. A claim
 * the skipping reconcile did not see is bound by its own event's reconcile or by the resync tick.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineClaim, VirtualMachinePool } from '../api/index.js';
import type { Kube } from '../kube/index.js';
import { claimOf, withClaimMarks } from '../domain/index.js';
import type { ReconcileDeps } from './converge.js';
import { reconcilePool } from './converge.js';
import { reconcileScope } from './resync.js';
import { HOUR, MINUTE, NOW, at, pool, seededRandom, steady } from '../../test/unit/builders.js';
import { claim, withClaims } from '../../test/unit/claim-builders.js';
import type { MemoryKube } from '../../test/unit/memory-kube.js';
import { memoryKube } from '../../test/unit/memory-kube.js';
import { testLog } from '../../test/logs.js';
import { createFunctionMetrics } from '../http/index.js';
import { countingCalls } from '../../test/kube-calls.js';

/** `kube` with its claim lists counted. */
function counting(kube: Kube): { kube: Kube; lists: () => number } {
  const c = countingCalls(kube, 'listClaims');
  return { kube: c.kube, lists: c.calls };
}

function deps(kube: Kube, now = NOW): ReconcileDeps {
  return {
    kube,
    now: () => now,
    rand: seededRandom(3),
    log: testLog('claims-read'),
    sleep: () => Promise.resolve(),
  };
}

const NOT_A_CLAIM = { claims: false } as const;

/** Two Running members, claims allowed (minIdle 0), and the given claims. */
function start(
  claims: VirtualMachineClaim[] = [],
  before?: Parameters<typeof memoryKube>[1],
): MemoryKube {
  const p = withClaims(pool({ replicas: 2 }), { minIdle: 0, maxReplicas: 2 });
  const ms = [0, 1].map((i) => steady(p, `runners-m${i}xxx`, { created: at(-HOUR + i * MINUTE) }));
  return memoryKube(
    {
      pool: p,
      vms: ms.map((m) => m.vm),
      disks: ms.flatMap((m) => m.disks),
      claims,
    },
    before,
  );
}

const poolOf = (m: MemoryKube): VirtualMachinePool =>
  [...m.store.pool.values()][0] as VirtualMachinePool;
const claimOfStore = (m: MemoryKube, name: string): VirtualMachineClaim | undefined =>
  m.store.claim.get(name) as VirtualMachineClaim | undefined;
const markedMembers = (m: MemoryKube): string[] =>
  [...m.store.vm.values()].flatMap((v) => {
    const mark = claimOf(v);
    return mark === undefined ? [] : [`${v.metadata.name ?? ''}=${mark.name}`];
  });

/** A converged pool whose status says no claim needs it (one reconcile that read them). */
async function settled(
  claims: VirtualMachineClaim[] = [],
  before?: Parameters<typeof memoryKube>[1],
): Promise<MemoryKube> {
  const m = start(claims, before);
  expect(await reconcilePool(deps(m.kube), 'ci', 'runners')).toMatchObject({ kind: 'converged' });
  return m;
}

/**
 * A settled pool with claim `c` left waiting: no member is idle (Ready for 2 h asked, the members
 * ran 1 h), and the claim's own event reconciled it.
 */
async function withWaitingClaim(): Promise<MemoryKube> {
  const m = await settled();
  m.touch<VirtualMachinePool>('pool', 'runners', (p) => ({
    ...p,
    spec: { ...p.spec, minReadySeconds: 7200 },
  }));
  m.store.claim.set('c', claim('c'));
  await reconcilePool(deps(m.kube), 'ci', 'runners', { claims: true });
  return m;
}

describe('which reconciles read the claims', () => {
  it('a pool whose status says no claim waits or is bound: a non-claim event reads none', async () => {
    const m = await settled();
    expect(poolOf(m).status).toMatchObject({ pendingClaims: 0, claimedReplicas: 0 });
    const c = counting(m.kube);
    expect(await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM)).toMatchObject({
      kind: 'converged',
      actions: 0,
    });
    expect(c.lists()).toBe(0);
    // The same reconcile for a claim's event, or with no cause given, reads them.
    await reconcilePool(deps(c.kube), 'ci', 'runners', { claims: true });
    await reconcilePool(deps(c.kube), 'ci', 'runners');
    expect(c.lists()).toBe(2);
  });

  it('a status without the counts (an older vmpool, a schema that prunes them) reads them', async () => {
    for (const drop of ['pendingClaims', 'claimedReplicas'] as const) {
      const m = await settled();
      m.touch<VirtualMachinePool>('pool', 'runners', (p) => {
        const status = { ...p.status };
        delete status[drop];
        return { ...p, status };
      });
      const c = counting(m.kube);
      await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM);
      expect(c.lists(), drop).toBe(1);
      // That reconcile wrote the counts back: the next one reads none.
      await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM);
      expect(c.lists(), drop).toBe(1);
    }
  });

  it('a claim made after the status said none: its own event binds it, another event does not see it', async () => {
    const m = await settled();
    m.store.claim.set('a', claim('a'));
    await reconcilePool(deps(m.kube), 'ci', 'runners', NOT_A_CLAIM);
    expect(markedMembers(m)).toEqual([]);
    await reconcilePool(deps(m.kube), 'ci', 'runners', { claims: true });
    expect(markedMembers(m)).toHaveLength(1);
    expect(claimOfStore(m, 'a')?.status?.phase).toBe('Bound');
    // Bound: every later reconcile reads the claims, whatever started it.
    const c = counting(m.kube);
    await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM);
    expect(c.lists()).toBe(1);
    expect(markedMembers(m)).toHaveLength(1);
  });

  it("a claim whose event was lost: the resync tick's window reads it and the pool binds it", async () => {
    const m = await settled();
    m.store.claim.set('a', claim('a'));
    const out = await reconcileScope(deps(m.kube), { kind: 'namespace', namespace: 'ci' });
    expect(out.map((o) => o.outcome.kind)).toEqual(['converged']);
    expect(markedMembers(m)).toHaveLength(1);
    expect(claimOfStore(m, 'a')?.status?.phase).toBe('Bound');
  });

  it("a pool scope from an event that is not a claim's reads none; from a claim's, reads them", async () => {
    const m = await settled();
    m.store.claim.set('a', claim('a'));
    const c = counting(m.kube);
    const scope = { kind: 'pool', namespace: 'ci', name: 'runners' } as const;
    await reconcileScope(deps(c.kube), { ...scope, claims: false });
    expect(c.lists()).toBe(0);
    const [out] = await reconcileScope(deps(c.kube), { ...scope, claims: true });
    // Every pass reads them (this one binds, then reads again to see it done).
    expect(out?.outcome).toMatchObject({ kind: 'converged', passes: c.lists() });
    expect(c.lists()).toBeGreaterThan(0);
    expect(markedMembers(m)).toHaveLength(1);
  });

  it('a member marked after the status was written is planned with its claim, never released', async () => {
    const m = await settled([claim('a')]);
    // The claim bound and the member marked by a concurrent reconcile whose status write is still
    // to come: the status says no claim is bound.
    const boundTo = markedMembers(m);
    expect(boundTo).toHaveLength(1);
    m.touch<VirtualMachinePool>('pool', 'runners', (p) => ({
      ...p,
      status: { ...p.status, claimedReplicas: 0, pendingClaims: 0 },
    }));
    const c = counting(m.kube);
    const before = m.writes.length;
    expect(await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM)).toMatchObject({
      kind: 'converged',
    });
    expect(c.lists()).toBe(1);
    expect(markedMembers(m)).toEqual(boundTo);
    expect(m.writes.slice(before).filter((w) => w.startsWith('deleteVm'))).toEqual([]);
    expect(poolOf(m).status).toMatchObject({ claimedReplicas: 1 });
  });

  it('the same member with its claim deleted: released (deleted) once, by the late read', async () => {
    const m = await settled([claim('a')]);
    const [bound] = markedMembers(m);
    m.store.claim.delete('a');
    m.touch<VirtualMachinePool>('pool', 'runners', (p) => ({
      ...p,
      status: { ...p.status, claimedReplicas: 0, pendingClaims: 0 },
    }));
    const before = m.writes.length;
    await reconcilePool(deps(m.kube), 'ci', 'runners', NOT_A_CLAIM);
    const name = (bound ?? '').split('=')[0] ?? '';
    expect(m.writes.slice(before).filter((w) => w.startsWith('deleteVm'))).toEqual([
      `deleteVm ${name}`,
    ]);
  });

  it('a claim left waiting is recorded (pendingClaims 1, none bound), so a pool event reads the claims', async () => {
    const m = await withWaitingClaim();
    expect(claimOfStore(m, 'c')?.status?.phase).toBe('Pending');
    expect(poolOf(m).status).toMatchObject({ pendingClaims: 1, claimedReplicas: 0 });
    expect(poolOf(m).status?.intent?.claims).toBeUndefined();
    const c = counting(m.kube);
    const out = await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM);
    expect(out).toMatchObject({ kind: 'converged', passes: c.lists() });
    expect(c.lists()).toBeGreaterThan(0);
  });

  it.each(['Expired', 'Lost'] as const)(
    'a claim ended (%s) by a pass that crashed before its status was written: the next member event still writes it',
    async (end) => {
      const m = await settled([claim('a', { ttl: '10m' })]);
      const [bound = ''] = markedMembers(m);
      const member = bound.split('=')[0] ?? '';
      // Expired: its ttl passed (the member is released, Delete); Lost: a person deleted the member.
      const later = new Date(NOW.getTime() + (end === 'Expired' ? 11 : 1) * MINUTE);
      if (end === 'Lost') m.store.vm.delete(member);
      const dying = new Proxy(m.kube, {
        get(target, prop: keyof Kube): unknown {
          if (prop === 'updateClaimStatus') return () => Promise.reject(new Error('crash'));
          return Reflect.get(target, prop);
        },
      });
      await reconcilePool(deps(dying, later), 'ci', 'runners').catch(() => undefined);
      expect(claimOfStore(m, 'a')?.status?.phase).toBe('Bound');
      expect(m.store.vm.has(member)).toBe(false);
      expect(markedMembers(m)).toEqual([]);
      // Nothing marked is left to say a claim needs work: the status does.
      expect(poolOf(m).status).toMatchObject({ claimedReplicas: 0, pendingClaims: 1 });
      await reconcilePool(deps(m.kube, later), 'ci', 'runners', NOT_A_CLAIM);
      expect(claimOfStore(m, 'a')?.status?.phase).toBe(end);
      expect(poolOf(m).status).toMatchObject({ claimedReplicas: 0, pendingClaims: 0 });
    },
  );

  it("a quiet pool of a resync window reports its claims' phases (its own events may not read them)", async () => {
    const m = await settled();
    m.store.claim.set('x', claim('x', { status: { phase: 'Expired' } }));
    const seen: string[] = [];
    const claims = {
      pool: (
        ns: string,
        p: string,
        _uid: string,
        phases: Readonly<Record<string, number>> | undefined,
      ) => {
        seen.push(`${ns}/${p} Expired=${String(phases?.Expired)}`);
      },
      bound: () => undefined,
      gone: () => undefined,
      retain: () => undefined,
    };
    const out = await reconcileScope(
      { ...deps(m.kube), claims },
      { kind: 'namespace', namespace: 'ci' },
    );
    expect(out).toMatchObject([{ outcome: { kind: 'converged', passes: 1, actions: 0 } }]);
    expect(seen).toEqual(['ci/runners Expired=1']);
  });

  it("a tick over the whole cluster drops the claim series of pools it did not list; a namespace's or a shard's keeps them", async () => {
    const m = await settled();
    const metrics = createFunctionMetrics();
    const run = (scope: Parameters<typeof reconcileScope>[1]) =>
      reconcileScope({ ...deps(m.kube), claims: metrics.claims }, scope);
    metrics.claims.pool('ci', 'deleted', 'uid-d', { Bound: 1 }, 0, true);
    await run({ kind: 'namespace', namespace: 'ci' });
    expect(metrics.registry.render()).toContain('pool="deleted"');
    await run({ kind: 'all', shard: { index: 0, count: 1 } });
    expect(metrics.registry.render()).toContain('pool="deleted"');
    await run({ kind: 'all' });
    const text = metrics.registry.render();
    expect(text).not.toContain('pool="deleted"');
    expect(text).toContain('vmpool_idle_members{namespace="ci",pool="runners"}');
  });

  it('a quiet pool of a resync window that uses no claims reports no claim series; one that does reports every phase', async () => {
    const plain = pool({ replicas: 2 });
    const ms = [0, 1].map((i) => steady(plain, `runners-m${i}xxx`, { created: at(-HOUR) }));
    const m = memoryKube({
      pool: plain,
      vms: ms.map((x) => x.vm),
      disks: ms.flatMap((x) => x.disks),
      // Another pool's claim: it does not make this pool one that uses claims.
      claims: [claim('other', { pool: 'desktops' })],
    });
    const metrics = createFunctionMetrics();
    const scope = { kind: 'namespace', namespace: 'ci' } as const;
    expect(await reconcilePool(deps(m.kube), 'ci', 'runners')).toMatchObject({ kind: 'converged' });
    const out = await reconcileScope({ ...deps(m.kube), claims: metrics.claims }, scope);
    expect(out).toMatchObject([{ outcome: { kind: 'converged', passes: 1, actions: 0 } }]);
    expect(metrics.registry.render()).not.toMatch(/^vmpool_(claims|idle_members)\{/m);
    // A claim of its own names it: from then on its series are reported.
    m.store.claim.set('x', claim('x', { status: { phase: 'Expired' } }));
    await reconcileScope({ ...deps(m.kube), claims: metrics.claims }, scope);
    const text = metrics.registry.render();
    expect(text).toContain('vmpool_claims{namespace="ci",pool="runners",phase="Expired"} 1');
    expect(text).toContain('vmpool_claims{namespace="ci",pool="runners",phase="Pending"} 0');
  });

  it('L7/L9, a concurrent bind: a claim binds the victim a claims-unread scale-down chose, just before its delete lands; the victim is kept, the other member goes', async () => {
    let bound = '';
    const m = await settled([], (l, store) => {
      if (l.method !== 'deleteVm' || bound !== '') return;
      // Another reconcile, started by the claim's event, binds the victim first: the member is
      // marked, the pool's status counts it, the claim is Bound.
      bound = l.name;
      const uid = `uid-${l.name}`;
      store.touch<VirtualMachine>('vm', l.name, (v) =>
        withClaimMarks(v, { name: 'a', uid: 'uid-a', onRelease: 'Delete' }),
      );
      store.touch<VirtualMachinePool>('pool', 'runners', (p) => ({
        ...p,
        status: { ...p.status, claimedReplicas: 1 },
      }));
      store.store.claim.set(
        'a',
        claim('a', {
          status: { phase: 'Bound', virtualMachineName: l.name, virtualMachineUid: uid },
        }),
      );
    });
    // The owner scales to 1: the pool's event, whose reconcile reads no claims.
    m.touch<VirtualMachinePool>('pool', 'runners', (p) => ({
      ...p,
      spec: { ...p.spec, replicas: 1 },
    }));
    const c = counting(m.kube);
    expect(await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM)).toMatchObject({
      kind: 'converged',
    });
    expect(bound).not.toBe('');
    // The stale delete was refused (its member changed since it was read), then the pass after read
    // the claims and chose the other member.
    expect(m.conflicts).toContain(`deleteVm ${bound}`);
    expect(c.lists()).toBeGreaterThan(0);
    expect(markedMembers(m)).toEqual([`${bound}=a`]);
    expect([...m.store.vm.keys()]).toEqual([bound]);
    expect(m.writes.filter((w) => w.startsWith('deleteVm'))).toHaveLength(1);
  });

  it('a waiting claim taken back (deleted, its event lost): the next member event reads the claims, records none waiting, and the one after reads none', async () => {
    const m = await withWaitingClaim();
    expect(poolOf(m).status).toMatchObject({ pendingClaims: 1 });
    m.store.claim.delete('c');
    const c = counting(m.kube);
    await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM);
    expect(c.lists()).toBeGreaterThan(0);
    expect(poolOf(m).status).toMatchObject({ pendingClaims: 0, claimedReplicas: 0 });
    const after = c.lists();
    await reconcilePool(deps(c.kube), 'ci', 'runners', NOT_A_CLAIM);
    expect(c.lists()).toBe(after);
  });
});
