/**
 * The effectful side of fleet control: drain marks go out fenced and with their Events, a drain
 * deadline comes back as a recheck time, a malformed deletion cost is reported with the write that
 * chose victims (and never by an idle reconcile), and rechecks fire once at the deadline.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../api/index.js';
import { keys } from '../api/index.js';
import type { PoolEvent } from '../kube/index.js';
import { reconcilePool } from './converge.js';
import type { ReconcileDeps } from './converge.js';
import { createRechecks, RECHECK_SLACK_MS } from './recheck.js';
import { at, MINUTE, NOW, pool, seededRandom, steady } from '../../test/unit/builders.js';
import type { Script } from '../../test/unit/fake-kube.js';
import { fakeKube, ok } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';

/** A live API server in miniature: the pool and VMs as stored, updated by the calls made. */
function served(p: VirtualMachinePool, vms: VirtualMachine[], disks: VirtualDisk[]) {
  const state = { pool: p, vms };
  const script: Script = {
    getPool: () => ok(state.pool),
    listVms: () => ok(state.vms),
    listDisks: () => ok(disks),
    updatePoolStatus: ([next]) => {
      state.pool = next;
      return ok(next);
    },
    updateVm: ([vm]) => {
      state.vms = state.vms.map((v) => (v.metadata.name === vm.metadata.name ? vm : v));
      return ok(vm);
    },
    deleteVm: ([, name]) => {
      state.vms = state.vms.filter((v) => v.metadata.name !== name);
      return ok(undefined);
    },
  };
  const f = fakeKube(script, p);
  const deps: ReconcileDeps = {
    kube: f.kube,
    now: () => NOW,
    rand: seededRandom(1),
    log: testLog('fleet'),
    sleep: () => Promise.resolve(),
  };
  const events = () => f.of('recordEvent').map((c) => (c.args[1] as PoolEvent).reason);
  return { state, f, deps, events };
}

function drainPool(replicas: number, annotations: Record<string, string> = {}) {
  const p = pool({ replicas });
  p.spec.scaleDown = { drainTimeout: '10m' };
  const ms = ['a', 'b', 'c'].map((x, i) =>
    steady(p, `runners-${x.repeat(5)}`, {
      created: at(-(3 - i) * MINUTE),
      annotations: x === 'c' ? annotations : {},
    }),
  );
  return { p, vms: ms.map((m) => m.vm), disks: ms.flatMap((m) => m.disks) };
}

describe('reconcilePool with drains', () => {
  it('records the victim, then marks it (DrainRequested), and says when to look again', async () => {
    const { p, vms, disks } = drainPool(2);
    const s = served(p, vms, disks);
    const out = await reconcilePool(s.deps, 'ci', 'runners');
    expect(out).toEqual({
      kind: 'converged',
      passes: 2,
      actions: 1,
      recheckAt: new Date(NOW.getTime() + 10 * MINUTE),
    });
    // The victim was recorded (the fence) before its mark went out.
    const order = s.f.calls
      .map((c) => c.method)
      .filter((m) => m !== 'getPool' && !m.startsWith('list'));
    expect(order.slice(0, 2)).toEqual(['updatePoolStatus', 'updateVm']);
    expect(s.events()).toEqual(['DrainRequested']);
    expect(
      s.state.vms.find((v) => v.metadata.name === 'runners-ccccc')?.metadata.annotations?.[
        keys.drainRequested
      ],
    ).toBe('2025-01-01T12:00:00Z');
    expect(s.state.pool.status?.drainingReplicas).toBe(1);
    expect(s.f.of('deleteVm')).toEqual([]);
  });

  it('deletes a drained member (SuccessfulDelete) and one past its timeout (DrainTimedOut)', async () => {
    const recorded = { intent: { deletes: [{ name: 'runners-ccccc', uid: 'uid-runners-ccccc' }] } };
    const drained = drainPool(2, { [keys.drainRequested]: at(-MINUTE), [keys.drained]: 'true' });
    const s1 = served({ ...drained.p, status: recorded }, drained.vms, drained.disks);
    await reconcilePool(s1.deps, 'ci', 'runners');
    expect(s1.events()).toEqual(['SuccessfulDelete']);
    const late = drainPool(2, { [keys.drainRequested]: at(-10 * MINUTE) });
    const s2 = served({ ...late.p, status: recorded }, late.vms, late.disks);
    await reconcilePool(s2.deps, 'ci', 'runners');
    expect(s2.events()).toEqual(['DrainTimedOut']);
    expect(s2.state.vms.map((v) => v.metadata.name)).toEqual(['runners-aaaaa', 'runners-bbbbb']);
  });

  it('reports a malformed deletion cost once, with the pass that chose victims; an idle pass writes nothing', async () => {
    const p = pool({ replicas: 3 });
    const ms = ['a', 'b', 'c'].map((x) =>
      steady(p, `runners-${x.repeat(5)}`, { annotations: { [keys.deletionCost]: 'low' } }),
    );
    const s = served(
      p,
      ms.map((m) => m.vm),
      ms.flatMap((m) => m.disks),
    );
    await reconcilePool(s.deps, 'ci', 'runners');
    const writes = s.f.calls.length;
    await reconcilePool(s.deps, 'ci', 'runners');
    expect(s.f.calls.slice(writes).map((c) => c.method)).toEqual([
      'getPool',
      'listVms',
      'listDisks',
      'listClaims',
    ]);
    expect(s.events()).toEqual([]);
    s.state.pool = { ...s.state.pool, spec: { ...s.state.pool.spec, replicas: 2 } };
    await reconcilePool(s.deps, 'ci', 'runners');
    // One per member the ranking read (all three), once.
    expect(s.events()).toEqual([
      'InvalidDeletionCost',
      'InvalidDeletionCost',
      'InvalidDeletionCost',
      'SuccessfulDelete',
    ]);
  });
});

describe('createRechecks', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs once at the deadline (plus slack); an earlier deadline replaces a later one', () => {
    vi.useFakeTimers();
    vi.setSystemTime(NOW);
    const r = createRechecks(() => new Date());
    const runs: string[] = [];
    r.at('ci/runners', new Date(NOW.getTime() + 60_000), () => runs.push('late'));
    r.at('ci/runners', new Date(NOW.getTime() + 30_000), () => runs.push('early'));
    r.at('ci/runners', new Date(NOW.getTime() + 45_000), () => runs.push('ignored'));
    expect(r.pending()).toEqual(['ci/runners']);
    vi.advanceTimersByTime(30_000 + RECHECK_SLACK_MS - 1);
    expect(runs).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(runs).toEqual(['early']);
    vi.advanceTimersByTime(120_000);
    expect(runs).toEqual(['early']);
    expect(r.pending()).toEqual([]);
  });

  it('a deadline already past runs right away', () => {
    vi.useFakeTimers();
    vi.setSystemTime(NOW);
    const r = createRechecks(() => new Date());
    const runs: number[] = [];
    r.at('ci/x', new Date(NOW.getTime() - 5_000), () => runs.push(1));
    vi.advanceTimersByTime(RECHECK_SLACK_MS);
    expect(runs).toEqual([1]);
  });
});
