import { describe, expect, it } from 'vitest';
import { keys, malformedOf } from '../api/index.js';
import type { Listed, PoolEvent } from '../kube/index.js';
import type { VirtualMachinePool } from '../api/index.js';
import { at, disk, HOUR, NOW, ttl30Pool, vm } from '../../test/unit/builders.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import type { Script } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';
import { collectDisks, GC_WINDOWS_IN_FLIGHT } from './gc.js';
import { GC_PARALLEL } from './batch.js';
import { WINDOW_PAGE } from './window.js';

const p = ttl30Pool;
const old = disk(p, 'runners-cache-old001', { freeSince: at(-2 * HOUR) });
const fresh = disk(p, 'runners-cache-new001', { freeSince: at(-HOUR / 6) });

describe('collectDisks', () => {
  it('deletes the disks free past ttl, records DiskCollected, and says when to wake next', async () => {
    const f = fakeKube({ listDisks: () => ok([old, fresh]) }, p);
    const out = await collectDisks(f.kube, NOW, testLog('gc'));
    expect(out).toMatchObject({ kind: 'done', skipped: 0 });
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name) : []).toEqual([
      'runners-cache-old001',
    ]);
    expect(out.kind === 'done' ? out.nextWakeMs : undefined).toBeGreaterThan(0);
    expect(f.of('deleteDisk').map((c) => c.args[1])).toEqual(['runners-cache-old001']);
    expect(f.of('recordEvent').map((c) => (c.args[1] as PoolEvent).reason)).toEqual([
      'DiskCollected',
    ]);
  });

  it('stops as forbidden on a missing grant, and retries a transient failure', async () => {
    const denied = fakeKube({ listDisks: () => fail('forbidden', 'cannot list') }, p);
    expect(await collectDisks(denied.kube, NOW, testLog('gc'))).toMatchObject({
      kind: 'forbidden',
    });
    // A disk is due, so the window reads its VMs.
    const flaky = fakeKube(
      { listDisks: () => ok([old]), listVms: () => fail('transient', 'etcd timeout') },
      p,
    );
    expect(await collectDisks(flaky.kube, NOW, testLog('gc'))).toEqual({
      kind: 'retry',
      reason: 'etcd timeout',
    });
  });

  it('counts a disk it could not delete as skipped', async () => {
    const f = fakeKube({ listDisks: () => ok([old]), deleteDisk: () => fail('conflict') }, p);
    expect(await collectDisks(f.kube, NOW, testLog('gc'))).toMatchObject({
      kind: 'done',
      deleted: [],
      skipped: 1,
    });
  });

  it("goes window by window: each window lists its own pools' disks and VMs, and the pass adds them up", async () => {
    const pools = ['a', 'b', 'c'].map((name) => ({
      ...p,
      metadata: { ...p.metadata, name, uid: `uid-${name}` },
    }));
    const disks = pools.flatMap((q) => [
      disk(q, `${q.metadata.name}-cache-old`, { freeSince: at(-2 * HOUR) }),
      disk(q, `${q.metadata.name}-cache-new`, { freeSince: at(-HOUR / 6) }),
    ]);
    const owned = (sel: string) =>
      disks.filter((d) => sel.includes(d.metadata.labels?.[keys.poolUid] ?? '?'));
    const f = fakeKube({
      listPools: ([, page]) => {
        const from = Number(page?.continue ?? '0');
        const value = pools.slice(from, from + (page?.limit ?? 3));
        return from + value.length < pools.length
          ? { ok: true, value, next: String(from + value.length) }
          : { ok: true, value };
      },
      listDisks: ([, sel]) => ok(owned(sel)),
    });
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 2);
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name) : out).toEqual([
      'a-cache-old',
      'b-cache-old',
      'c-cache-old',
    ]);
    expect(f.of('listDisks').map((c) => c.args)).toEqual([
      ['ci', `${keys.poolUid} in (uid-a,uid-b)`, WINDOW_PAGE],
      ['ci', `${keys.poolUid} in (uid-c)`, WINDOW_PAGE],
    ]);
    // The soonest wake of all windows: the fresh disks are 20 minutes from their ttl.
    expect(out.kind === 'done' ? out.nextWakeMs : undefined).toBe(20 * 60 * 1000);
  });

  it('reads no VM in a window none of whose disks is due, and its wake-up still counts', async () => {
    const f = fakeKube({ listDisks: () => ok([fresh]) }, p);
    expect(await collectDisks(f.kube, NOW, testLog('gc'))).toEqual({
      kind: 'done',
      deleted: [],
      skipped: 0,
      nextWakeMs: 20 * 60 * 1000,
    });
    expect(f.of('listVms')).toEqual([]);
    // One disk due: the window's VMs are read (and, before a delete, the namespace's).
    const due = fakeKube({ listDisks: () => ok([fresh, old]) }, p);
    expect(await collectDisks(due.kube, NOW, testLog('gc'))).toMatchObject({ kind: 'done' });
    expect(due.of('listVms').map((c) => c.args[1])).toEqual([
      `${keys.poolUid} in (${p.metadata.uid})`,
      '',
    ]);
  });

  it('a window with a disk that does not parse reads its VMs and says which pool it holds back, with nothing due', async () => {
    const odd = malformedOf(
      'VirtualDisk',
      {
        metadata: {
          name: 'runners-cache-odd001',
          namespace: 'ci',
          labels: { [keys.poolUid]: p.metadata.uid },
        },
      },
      'spec.persistentVolumeClaim.size: Invalid input',
    );
    const f = fakeKube({ listDisks: () => ({ ok: true, value: [fresh], malformed: [odd] }) }, p);
    const lines: string[] = [];
    expect(await collectDisks(f.kube, NOW, testLog('gc', 'silent', lines))).toMatchObject({
      kind: 'done',
      deleted: [],
    });
    expect(f.of('listVms')).toHaveLength(1);
    // pino's warn level is 40.
    expect(lines.some((l) => l.includes('"level":40') && l.includes('runners-cache-odd001'))).toBe(
      true,
    );
  });

  it('reads every VM of a namespace page by page before deleting: a VM on the second page keeps its disk', async () => {
    const holder = {
      ...vm(p, 'outsider-1', { refs: [{ kind: 'VirtualDisk', name: 'runners-cache-old001' }] }),
    };
    holder.metadata.labels = {};
    const f = fakeKube(
      {
        listDisks: () => ok([old]),
        listVms: ([, sel, page]) =>
          sel !== ''
            ? ok([])
            : page?.continue === undefined
              ? { ok: true, value: [vm(p, 'other-vm')], next: 'p2' }
              : ok([holder]),
      },
      p,
    );
    const out = await collectDisks(f.kube, NOW, testLog('gc'));
    expect(out).toMatchObject({ kind: 'done', deleted: [] });
    expect(f.of('listVms').map((c) => c.args)).toEqual([
      ['ci', `${keys.poolUid} in (${p.metadata.uid ?? ''})`, WINDOW_PAGE],
      ['ci', '', {}],
      ['ci', '', { continue: 'p2' }],
    ]);
    expect(f.of('deleteDisk')).toEqual([]);
  });
});

describe('collectDisks, a disk and its holder in different windows of one namespace (L3)', () => {
  // Pool a's free disk is past its ttl; a member of pool b, in the same namespace, references it.
  // Pool b is large enough that the object budget gives it a window of its own, after a's.
  const a = { ...p, metadata: { ...p.metadata, name: 'a', uid: 'uid-a' } };
  const b = {
    ...p,
    metadata: { ...p.metadata, name: 'b', uid: 'uid-b' },
    spec: { ...p.spec, replicas: 3000 },
  };
  const due = disk(a, 'a-cache-old', { freeSince: at(-2 * HOUR) });
  const holder = vm(b, 'b-1', { refs: [{ kind: 'VirtualDisk', name: 'a-cache-old' }] });
  const script = (pools: VirtualMachinePool[]): Partial<Script> => ({
    listPools: () => ok(pools),
    listDisks: ([, sel]) => ok(sel.includes('uid-a') ? [due] : []),
    // Selected by pool uid: only that pool's members; an empty selector: the whole namespace.
    listVms: ([, sel]) =>
      ok(
        sel === ''
          ? [holder]
          : [holder].filter((v) => sel.includes(v.metadata.labels?.[keys.poolUid] ?? '?')),
      ),
  });

  it("keeps a due disk that a VM of another window's pool references, and deletes it once nothing does", async () => {
    const f = fakeKube(script([a, b]));
    const out = await collectDisks(f.kube, NOW, testLog('gc'));
    expect(out).toMatchObject({ kind: 'done', deleted: [], skipped: 0 });
    // Two windows (the budget cut them), and a's window read its namespace whole before deciding.
    expect(f.of('listDisks').map((c) => c.args[1])).toEqual([
      `${keys.poolUid} in (uid-a)`,
      `${keys.poolUid} in (uid-b)`,
    ]);
    expect(f.of('listVms').map((c) => c.args[1])).toEqual([`${keys.poolUid} in (uid-a)`, '']);
    expect(f.of('deleteDisk')).toEqual([]);
    // The same cut with the holder gone: the disk goes, under the uid and resourceVersion listed.
    const gone = fakeKube({ ...script([a, b]), listVms: () => ok([]) });
    const after = await collectDisks(gone.kube, NOW, testLog('gc'));
    expect(after.kind === 'done' ? after.deleted.map((c) => c.name) : after).toEqual([
      'a-cache-old',
    ]);
    expect(gone.of('deleteDisk').map((c) => c.args[2])).toEqual([
      { uid: due.metadata.uid, resourceVersion: due.metadata.resourceVersion },
    ]);
  });
});

/** A listPools answer that gives `pools` one per page: one pool per window. */
function onePerPage(
  pools: readonly VirtualMachinePool[],
): (...args: Parameters<Script['listPools'] & object>) => Listed<VirtualMachinePool> {
  return ([, page]) => {
    const from = Number(page?.continue ?? '0');
    const value = pools.slice(from, from + 1);
    return from + 1 < pools.length
      ? { ok: true, value, next: String(from + 1) }
      : { ok: true, value };
  };
}

describe('collectDisks, windows in flight', () => {
  const pools = ['a', 'b', 'c', 'd', 'e'].map((name) => ({
    ...p,
    metadata: { ...p.metadata, name, uid: `uid-${name}` },
  }));
  const disks = pools.map((q) =>
    disk(q, `${q.metadata.name}-cache-old`, { freeSince: at(-2 * HOUR) }),
  );
  const owned = (sel: string) =>
    disks.filter((d) => sel.includes(d.metadata.labels?.[keys.poolUid] ?? '?'));
  const listPools = onePerPage(pools);
  const gate = () => {
    let open = (): void => undefined;
    const opened = new Promise<void>((r) => (open = r));
    return { open, opened };
  };

  it("reads the next windows while one window's deletes are in flight, and never more than GC_WINDOWS_IN_FLIGHT at once", async () => {
    const g = gate();
    let listedWhileHeld = 0;
    let held = true;
    const f = fakeKube({
      listPools,
      listDisks: ([, sel]) => {
        if (held) listedWhileHeld++;
        return ok(owned(sel));
      },
      deleteDisk: async ([, name]) => {
        if (name === 'a-cache-old') await g.opened;
        return ok(undefined);
      },
    });
    const out = collectDisks(f.kube, NOW, testLog('gc'), 1);
    // Let every read that may start without the first window's delete start.
    for (let i = 0; i < 50; i++) await Promise.resolve();
    await new Promise((r) => setTimeout(r, 10));
    // Window a holds its delete: the windows after it up to the bound were read beside it, no more.
    expect(GC_WINDOWS_IN_FLIGHT).toBeLessThan(pools.length);
    expect(listedWhileHeld).toBe(GC_WINDOWS_IN_FLIGHT);
    expect(f.of('listDisks').map((c) => c.args[1])).toEqual(
      pools.slice(0, GC_WINDOWS_IN_FLIGHT).map((q) => `${keys.poolUid} in (${q.metadata.uid})`),
    );
    held = false;
    g.open();
    const done = await out;
    // Every window counted, in window order.
    expect(done.kind === 'done' ? done.deleted.map((c) => c.name) : done).toEqual(
      disks.map((d) => d.metadata.name),
    );
  });

  it('a failed window stops the pass: no window starts after it, and the pass answers once the windows beside it finished their deletes', async () => {
    const g = gate();
    const deletedAt: string[] = [];
    const f = fakeKube({
      listPools,
      listDisks: ([, sel]) =>
        sel.includes('uid-b') ? fail('transient', 'etcd timeout') : ok(owned(sel)),
      deleteDisk: async ([, name]) => {
        await g.opened;
        deletedAt.push(name);
        return ok(undefined);
      },
    });
    const out = collectDisks(f.kube, NOW, testLog('gc'), 1);
    let answered = false;
    void out.then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 10));
    // Window b failed while a's delete waits: the pass has not answered.
    expect(answered).toBe(false);
    g.open();
    expect(await out).toEqual({ kind: 'retry', reason: 'etcd timeout' });
    // Only windows started before the failure was known ran (a, b and those read beside them); the
    // last pools' windows never started, and each started window but b deleted its disk.
    const started = f.of('listDisks').map((c) => String(c.args[1]));
    expect(started.length).toBeLessThanOrEqual(GC_WINDOWS_IN_FLIGHT);
    expect(started.some((sel) => sel.includes('uid-e'))).toBe(false);
    const expected = pools
      .filter((q) => q.metadata.uid !== 'uid-b')
      .filter((q) => started.some((sel) => sel.includes(q.metadata.uid)))
      .map((q) => `${q.metadata.name}-cache-old`);
    expect(expected).toContain('a-cache-old');
    expect(deletedAt.toSorted()).toEqual(expected);
  });
});

describe('collectDisks, deletes of windows in flight', () => {
  it('keeps the whole pass to GC_PARALLEL deletes in flight, whatever the number of windows', async () => {
    const pools = Array.from({ length: 5 }, (_, i) => ({
      ...p,
      metadata: { ...p.metadata, name: `p${i}`, uid: `uid-p${i}` },
    }));
    // 40 due disks a pool: 200 in all, more than the bound in every pair of windows.
    const disks = pools.flatMap((q) =>
      Array.from({ length: 40 }, (_, j) =>
        disk(q, `${q.metadata.name}-cache-${j}`, { freeSince: at(-2 * HOUR) }),
      ),
    );
    let now = 0;
    let most = 0;
    const f = fakeKube({
      listPools: onePerPage(pools),
      listDisks: ([, sel]) =>
        ok(disks.filter((d) => sel.includes(`${d.metadata.labels?.[keys.poolUid] ?? '?'})`))),
      deleteDisk: async () => {
        most = Math.max(most, ++now);
        await new Promise((r) => setTimeout(r, 2));
        now--;
        return ok(undefined);
      },
    });
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 1);
    expect(out.kind === 'done' ? out.deleted.length : out).toBe(200);
    expect(most).toBe(GC_PARALLEL);
  });
});
