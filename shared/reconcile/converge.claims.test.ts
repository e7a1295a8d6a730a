/**
 * Claims through whole reconciles on an in-memory API server: a bind → release cycle, and a crash
 * after every API call of the bind and of the release, after which a fresh reconcile finishes the
 * work without binding twice or deleting twice (L4, L9).
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineClaim, VirtualMachinePool } from '../api/index.js';
import { keys } from '../api/index.js';
import type { Kube } from '../kube/index.js';
import { claimOf } from '../domain/index.js';
import { reconcilePool } from './converge.js';
import type { ReconcileDeps } from './converge.js';
import { HOUR, MINUTE, NOW, at, pool, seededRandom, steady } from '../../test/unit/builders.js';
import { claim, withClaims } from '../../test/unit/claim-builders.js';
import type { MemoryKube } from '../../test/unit/memory-kube.js';
import { memoryKube } from '../../test/unit/memory-kube.js';
import { testLog } from '../../test/logs.js';

const WRITES: ReadonlySet<keyof Kube> = new Set([
  'updatePoolStatus',
  'updatePool',
  'updateVm',
  'deleteVm',
  'createVm',
  'createDisk',
  'updateDisk',
  'deleteDisk',
  'updateClaimStatus',
]);

/** `kube`, dying (throwing) right after its `after`-th write landed; `writes()` counts them. */
function crashing(kube: Kube, after = Infinity): { kube: Kube; writes: () => number } {
  let n = 0;
  const proxy = new Proxy(kube, {
    get(target, prop: keyof Kube): unknown {
      const f: unknown = Reflect.get(target, prop);
      if (typeof f !== 'function' || !WRITES.has(prop)) return f;
      return async (...args: unknown[]) => {
        const out: unknown = await (f as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (++n === after) throw new Error(`crash after write ${n}`);
        return out;
      };
    },
  });
  return { kube: proxy, writes: () => n };
}

function deps(kube: Kube, now = NOW): ReconcileDeps {
  return {
    kube,
    now: () => now,
    rand: seededRandom(7),
    log: testLog('claims'),
    sleep: () => Promise.resolve(),
  };
}

/** Two Running members, minIdle 1, and the claim `a`. */
function start(): MemoryKube {
  const p = withClaims(pool({ replicas: 1 }), { minIdle: 1, maxReplicas: 4 });
  const ms = [0, 1].map((i) => steady(p, `runners-m${i}xxx`, { created: at(-HOUR + i * MINUTE) }));
  return memoryKube({
    pool: p,
    vms: ms.map((m) => m.vm),
    disks: ms.flatMap((m) => m.disks),
    claims: [claim('a', { holder: 'job-123' })],
  });
}

const vms = (m: MemoryKube): VirtualMachine[] => [...m.store.vm.values()] as VirtualMachine[];
const poolOf = (m: MemoryKube): VirtualMachinePool =>
  [...m.store.pool.values()][0] as VirtualMachinePool;
const claimA = (m: MemoryKube): VirtualMachineClaim | undefined =>
  m.store.claim.get('a') as VirtualMachineClaim | undefined;
const marked = (m: MemoryKube): string[] =>
  vms(m).flatMap((v) =>
    claimOf(v) === undefined ? [] : [`${v.metadata.name ?? ''}=${claimOf(v)?.name ?? ''}`],
  );

/** The state a bind must end in: one member marked for `a`, `a` Bound to it, no intent left. */
function expectBound(m: MemoryKube): string {
  expect(marked(m)).toEqual(['runners-m0xxx=a']);
  expect(claimA(m)?.status).toMatchObject({
    phase: 'Bound',
    virtualMachineName: 'runners-m0xxx',
    virtualMachineUid: 'uid-runners-m0xxx',
  });
  expect(poolOf(m).status?.intent?.claims).toBeUndefined();
  expect(poolOf(m).status).toMatchObject({ claimedReplicas: 1 });
  // Only the member bound was ever marked: no second member took the claim on the way.
  expect(m.writes.filter((w) => w.startsWith('updateVm'))).toEqual(
    expect.arrayContaining(['updateVm runners-m0xxx']),
  );
  expect(m.writes.filter((w) => w === 'updateVm runners-m1xxx')).toEqual([]);
  return 'runners-m0xxx';
}

describe('claims through reconciles', () => {
  it('binds, then releases on the claim deletion (Delete), with Events on pool and claim', async () => {
    const m = start();
    expect(await reconcilePool(deps(m.kube), 'ci', 'runners')).toMatchObject({ kind: 'converged' });
    expectBound(m);
    expect(m.claimEvents).toEqual(['a Claimed']);
    const bound = vms(m).find((v) => v.metadata.name === 'runners-m0xxx');
    expect(bound?.metadata.labels?.[keys.claimed]).toBe('true');

    m.store.claim.delete('a');
    expect(await reconcilePool(deps(m.kube), 'ci', 'runners')).toMatchObject({ kind: 'converged' });
    expect(m.writes.filter((w) => w === 'deleteVm runners-m0xxx')).toHaveLength(1);
    expect(marked(m)).toEqual([]);
    expect(m.claimEvents).toEqual(['a Claimed', 'a Released']);
    expect(poolOf(m).status).toMatchObject({ claimedReplicas: 0 });
  });

  it('tells the claim metrics: phases and idle members each pass, the wait of each binding, the pool gone', async () => {
    const m = start();
    const seen: string[] = [];
    const claims = {
      pool: (
        ns: string,
        p: string,
        _uid: string,
        phases: Readonly<Record<string, number>>,
        idle: number,
      ) => {
        seen.push(
          `${ns}/${p} Pending=${phases.Pending ?? 0} Bound=${phases.Bound ?? 0} idle=${idle}`,
        );
      },
      bound: (ns: string, p: string, seconds: number) => {
        seen.push(`${ns}/${p} bound after ${seconds}s`);
      },
      gone: (ns: string, p: string) => void seen.push(`${ns}/${p} gone`),
      retain: () => undefined,
    };
    await reconcilePool({ ...deps(m.kube), claims }, 'ci', 'runners');
    // The claim was created a minute before it was bound.
    expect(seen).toEqual([
      'ci/runners Pending=0 Bound=1 idle=1',
      'ci/runners bound after 60s',
      'ci/runners Pending=0 Bound=1 idle=1',
    ]);
    m.store.pool.delete('runners');
    expect(await reconcilePool({ ...deps(m.kube), claims }, 'ci', 'runners')).toEqual({
      kind: 'gone',
    });
    expect(seen.at(-1)).toBe('ci/runners gone');
  });

  it('a crash after any write of the bind: a fresh reconcile finishes it, bound once', async () => {
    const clean = crashing(start().kube);
    await reconcilePool(deps(clean.kube), 'ci', 'runners');
    // Intent, mark, claim status, intent dropped.
    expect(clean.writes()).toBe(4);
    for (let k = 1; k <= clean.writes(); k++) {
      const m = start();
      await reconcilePool(deps(crashing(m.kube, k).kube), 'ci', 'runners').catch(() => undefined);
      const done = await reconcilePool(
        deps(m.kube, new Date(NOW.getTime() + MINUTE)),
        'ci',
        'runners',
      );
      expect(done.kind, `crash after write ${k}`).toBe('converged');
      expectBound(m);
    }
  });

  it('a crash after any write of the release: the member is deleted once, nothing else', async () => {
    for (let k = 1; k <= 3; k++) {
      const m = start();
      await reconcilePool(deps(m.kube), 'ci', 'runners');
      m.store.claim.delete('a');
      const before = m.writes.length;
      await reconcilePool(deps(crashing(m.kube, k).kube), 'ci', 'runners').catch(() => undefined);
      const done = await reconcilePool(deps(m.kube), 'ci', 'runners');
      expect(done.kind, `crash after write ${k}`).toBe('converged');
      const after = m.writes.slice(before);
      expect(after.filter((w) => w.startsWith('deleteVm'))).toEqual(['deleteVm runners-m0xxx']);
      expect(marked(m)).toEqual([]);
      expect(vms(m).map((v) => v.metadata.name)).toEqual(['runners-m1xxx']);
    }
  });

  it('an expiry with Recycle: the marks go, the claim stays Expired, a crash in between heals', async () => {
    for (const k of [0, 1, 2, 3]) {
      const m = start();
      m.touch<VirtualMachineClaim>('claim', 'a', (c) => ({
        ...c,
        spec: { ...c.spec, ttl: '10m', onRelease: 'Recycle' },
      }));
      await reconcilePool(deps(m.kube), 'ci', 'runners');
      expect(claimA(m)?.status?.expiresAt).toBe(at(10 * MINUTE));
      const late = new Date(NOW.getTime() + 11 * MINUTE);
      if (k > 0)
        await reconcilePool(deps(crashing(m.kube, k).kube, late), 'ci', 'runners').catch(
          () => undefined,
        );
      await reconcilePool(deps(m.kube, late), 'ci', 'runners');
      expect(claimA(m)?.status).toMatchObject({
        phase: 'Expired',
        virtualMachineName: 'runners-m0xxx',
      });
      expect(marked(m)).toEqual([]);
      // Back to idle, the member makes the pool one over its target (minIdle 1): one idle leaves.
      expect(vms(m)).toHaveLength(1);
      // Events are best effort: a crash right after a write loses the Event of that write.
      if (k === 0) expect(m.claimEvents).toEqual(['a Claimed', 'a Released', 'a ClaimExpired']);
    }
  });
});
