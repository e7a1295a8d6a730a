import { describe, expect, it } from 'vitest';
import { keys, malformedOf } from '../api/index.js';
import type { Listed, PageRequest, PoolEvent } from '../kube/index.js';
import type { VirtualDisk, VirtualMachinePool } from '../api/index.js';
import { at, disk, HOUR, NOW, ttl30Pool, vm } from '../../test/unit/builders.js';
import { fail, fakeKube, ok, plainArgs } from '../../test/unit/fake-kube.js';
import type { Script } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';
import { collectDisks, GC_PAGE } from './gc.js';
import { GC_PARALLEL } from './batch.js';

const p = ttl30Pool;
const old = disk(p, 'runners-cache-old001', { freeSince: at(-2 * HOUR) });
const fresh = disk(p, 'runners-cache-new001', { freeSince: at(-HOUR / 6) });

/** A list answer that gives `items` `limit` at a time, continued by the index of the next. */
function paged<T>(items: readonly T[]): (page: PageRequest | undefined) => Listed<T> {
  return (page) => {
    const from = Number(page?.continue ?? '0');
    const value = items.slice(from, from + (page?.limit ?? items.length));
    return from + value.length < items.length
      ? { ok: true, value, next: String(from + value.length) }
      : { ok: true, value };
  };
}

const named = (pools: string[]): VirtualMachinePool[] =>
  pools.map((name) => ({ ...p, metadata: { ...p.metadata, name, uid: `uid-${name}` } }));

/**
 * Pool `a`'s disks listed one page of `first`, then a 410 for the page after it (the token
 * expired), then `then` whole: the restarted list.
 */
function restarted(a: VirtualMachinePool, first: Listed<VirtualDisk>, then: VirtualDisk[]) {
  let read = 0;
  return fakeKube({
    listPools: () => ok([a]),
    listDisks: () => {
      read++;
      return read === 1
        ? first
        : read === 2
          ? { ...fail('transient', 'expired'), code: 410 }
          : ok(then);
    },
  });
}

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
    const noPools = fakeKube({ listPools: () => fail('forbidden', 'cannot list pools') }, p);
    expect(await collectDisks(noPools.kube, NOW, testLog('gc'))).toMatchObject({
      kind: 'forbidden',
    });
    // A disk is due, so the pass reads the namespace's VMs.
    const flaky = fakeKube(
      { listDisks: () => ok([old]), listVms: () => fail('transient', 'etcd timeout') },
      p,
    );
    expect(await collectDisks(flaky.kube, NOW, testLog('gc'))).toEqual({
      kind: 'retry',
      reason: 'etcd timeout',
    });
    expect(flaky.of('deleteDisk')).toEqual([]);
  });

  it('counts a disk it could not delete as skipped', async () => {
    const f = fakeKube({ listDisks: () => ok([old]), deleteDisk: () => fail('conflict') }, p);
    expect(await collectDisks(f.kube, NOW, testLog('gc'))).toMatchObject({
      kind: 'done',
      deleted: [],
      skipped: 1,
    });
  });

  it('lists every pool and every pool disk once, page by page, with no uid in any selector', async () => {
    const pools = named(['a', 'b', 'c']);
    const disks = pools.flatMap((q) => [
      disk(q, `${q.metadata.name}-cache-old`, { freeSince: at(-2 * HOUR) }),
      disk(q, `${q.metadata.name}-cache-new`, { freeSince: at(-HOUR / 6) }),
    ]);
    const f = fakeKube({
      listPools: ([, page]) => paged(pools)(page),
      listDisks: ([, , page]) => paged(disks)(page),
    });
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 2);
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name) : out).toEqual([
      'a-cache-old',
      'b-cache-old',
      'c-cache-old',
    ]);
    // Across the cluster, by the label's existence: the API server tests no uid against any disk.
    // Lean: the pass keeps facts, so the objects' managedFields are never parsed.
    expect(f.of('listDisks').map(plainArgs)).toEqual([
      [undefined, keys.poolUid, { limit: 2, lean: true }],
      [undefined, keys.poolUid, { limit: 2, continue: '2', lean: true }],
      [undefined, keys.poolUid, { limit: 2, continue: '4', lean: true }],
    ]);
    expect(f.of('listPools').map(plainArgs)).toEqual([
      [undefined, { limit: 2, lean: true }],
      [undefined, { limit: 2, continue: '2', lean: true }],
    ]);
    // The soonest wake of all pools: the fresh disks are 20 minutes from their ttl.
    expect(out.kind === 'done' ? out.nextWakeMs : undefined).toBe(20 * 60 * 1000);
  });

  it('reads no VM when no disk is due, and its wake-up still counts', async () => {
    const f = fakeKube({ listDisks: () => ok([fresh]) }, p);
    expect(await collectDisks(f.kube, NOW, testLog('gc'))).toEqual({
      kind: 'done',
      deleted: [],
      skipped: 0,
      nextWakeMs: 20 * 60 * 1000,
    });
    expect(f.of('listVms')).toEqual([]);
    // One disk due: every VM of its namespace is read, once.
    const due = fakeKube({ listDisks: () => ok([fresh, old]) }, p);
    expect(await collectDisks(due.kube, NOW, testLog('gc'))).toMatchObject({ kind: 'done' });
    expect(due.of('listVms').map((c) => c.args)).toEqual([['ci', '', { lean: true }]]);
  });

  it('a disk that does not parse holds back the pool it claims, and the pass says which', async () => {
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
    const f = fakeKube({ listDisks: () => ({ ok: true, value: [old], malformed: [odd] }) }, p);
    const lines: string[] = [];
    expect(await collectDisks(f.kube, NOW, testLog('gc', 'silent', lines))).toMatchObject({
      kind: 'done',
      deleted: [],
    });
    expect(f.of('deleteDisk')).toEqual([]);
    // pino's warn level is 40.
    expect(lines.some((l) => l.includes('"level":40') && l.includes('runners-cache-odd001'))).toBe(
      true,
    );
    // One pool's malformed disk holds back that pool only: another pool's due disk goes.
    const [q] = named(['q']);
    const theirs = disk(q!, 'q-cache-old', { freeSince: at(-2 * HOUR) });
    const g = fakeKube({
      listPools: () => ok([p, q!]),
      listDisks: () => ({ ok: true, value: [old, theirs], malformed: [odd] }),
    });
    const out = await collectDisks(g.kube, NOW, testLog('gc'));
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name) : out).toEqual(['q-cache-old']);
  });

  it('an unparseable disk a member controls holds back that member pool, found through the VM list', async () => {
    const member = vm(p, 'runners-abcde');
    const odd = malformedOf(
      'VirtualDisk',
      {
        metadata: {
          name: 'runners-abcde-root',
          namespace: 'ci',
          ownerReferences: [
            {
              apiVersion: 'x',
              kind: 'VirtualMachine',
              name: 'runners-abcde',
              uid: member.metadata.uid,
              controller: true,
            },
          ],
        },
      },
      'spec: Invalid input',
    );
    const f = fakeKube(
      {
        listDisks: () => ({ ok: true, value: [old], malformed: [odd] }),
        listVms: () => ok([member]),
      },
      p,
    );
    expect(await collectDisks(f.kube, NOW, testLog('gc'))).toMatchObject({ deleted: [] });
    expect(f.of('deleteDisk')).toEqual([]);
  });

  it('reads every VM of a namespace page by page before deleting: a VM on the second page keeps its disk', async () => {
    const holder = {
      ...vm(p, 'outsider-1', { refs: [{ kind: 'VirtualDisk', name: 'runners-cache-old001' }] }),
    };
    holder.metadata.labels = {};
    const f = fakeKube(
      {
        listDisks: () => ok([old]),
        listVms: ([, , page]) =>
          page?.continue === undefined
            ? { ok: true, value: [vm(p, 'other-vm')], next: 'p2' }
            : ok([holder]),
      },
      p,
    );
    const out = await collectDisks(f.kube, NOW, testLog('gc'));
    expect(out).toMatchObject({ kind: 'done', deleted: [] });
    expect(f.of('listVms').map((c) => c.args)).toEqual([
      ['ci', '', { lean: true }],
      ['ci', '', { lean: true, continue: 'p2' }],
    ]);
    expect(f.of('deleteDisk')).toEqual([]);
  });

  it('a VM that does not parse holds what it names, or its whole namespace when its references cannot be read', async () => {
    const naming = malformedOf(
      'VirtualMachine',
      {
        metadata: { name: 'odd-vm', namespace: 'ci' },
        spec: { blockDeviceRefs: [{ kind: 'VirtualDisk', name: 'runners-cache-old001' }] },
      },
      'spec.runPolicy: Invalid input',
    );
    const f = fakeKube(
      { listDisks: () => ok([old]), listVms: () => ({ ok: true, value: [], malformed: [naming] }) },
      p,
    );
    expect(await collectDisks(f.kube, NOW, testLog('gc'))).toMatchObject({ deleted: [] });
    expect(f.of('deleteDisk')).toEqual([]);
    const unreadable = malformedOf(
      'VirtualMachine',
      { metadata: { name: 'odd-vm', namespace: 'ci' }, spec: { blockDeviceRefs: 'no list' } },
      'spec.blockDeviceRefs: Invalid input',
    );
    const g = fakeKube(
      {
        listDisks: () => ok([old]),
        listVms: () => ({ ok: true, value: [], malformed: [unreadable] }),
      },
      p,
    );
    expect(await collectDisks(g.kube, NOW, testLog('gc'))).toMatchObject({ deleted: [] });
    expect(g.of('deleteDisk')).toEqual([]);
  });

  it('a disk list restarted after an expired token gives its first page again: each disk is deleted once', async () => {
    const pools = named(['a', 'b']);
    const disks = pools.map((q) =>
      disk(q, `${q.metadata.name}-cache-old`, { freeSince: at(-2 * HOUR) }),
    );
    let expired = false;
    const f = fakeKube({
      listPools: () => ok(pools),
      listDisks: ([, , page]) => {
        if (page?.continue !== undefined && !expired) {
          expired = true;
          return { ...fail('transient', 'expired'), code: 410 };
        }
        return paged(disks)(page);
      },
    });
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 1);
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name).sort() : out).toEqual([
      'a-cache-old',
      'b-cache-old',
    ]);
    expect(f.of('deleteDisk')).toHaveLength(2);
    expect(f.of('listDisks')).toHaveLength(4);
  });

  it('a disk that stopped being free on a later page of a restarted list is not collected', async () => {
    const [a] = named(['a']);
    const was = disk(a!, 'a-cache-old', { freeSince: at(-2 * HOUR) });
    // Claimed between the two reads: no free-since any more, a new resourceVersion.
    const now: VirtualDisk = {
      ...was,
      metadata: { ...was.metadata, annotations: {}, resourceVersion: '2' },
    };
    const f = restarted(a!, { ok: true, value: [was], next: 'x' }, [now]);
    expect(await collectDisks(f.kube, NOW, testLog('gc'), 1)).toMatchObject({ deleted: [] });
    expect(f.of('deleteDisk')).toEqual([]);
  });

  it('a disk deleted between a first read and a restarted list is forgotten with that read: nothing deleted from it', async () => {
    const [a] = named(['a']);
    const gone = disk(a!, 'a-cache-gone', { freeSince: at(-2 * HOUR), uid: 'uid-gone' });
    const stays = disk(a!, 'a-cache-stays', { freeSince: at(-2 * HOUR), uid: 'uid-stays' });
    // Read once, then deleted by someone else before the expired token restarts the list.
    const f = restarted(a!, { ok: true, value: [gone], next: 'x' }, [stays]);
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 1);
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name) : out).toEqual(['a-cache-stays']);
    expect(f.of('deleteDisk').map((c) => c.args[1])).toEqual(['a-cache-stays']);
  });

  it('a malformed disk of a first read, fixed before a restarted list, holds back nothing', async () => {
    const [a] = named(['a']);
    const due = disk(a!, 'a-cache-old', { freeSince: at(-2 * HOUR), uid: 'uid-old' });
    const broken = malformedOf(
      'VirtualDisk',
      {
        metadata: {
          name: 'a-cache-bad',
          namespace: 'ci',
          uid: 'uid-bad',
          labels: { [keys.poolUid]: a!.metadata.uid },
        },
      },
      'spec.persistentVolumeClaim.size: Invalid input',
    );
    const f = restarted(a!, { ok: true, value: [], malformed: [broken], next: 'x' }, [due]);
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 1);
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name) : out).toEqual(['a-cache-old']);
  });

  it('an Event that throws while deletes are still out is logged, as every refused Event is, never left unhandled', async () => {
    const [a] = named(['a']);
    const disks = ['x', 'y', 'z'].map((n) =>
      disk(a!, `a-cache-${n}`, { freeSince: at(-2 * HOUR), uid: `uid-${n}` }),
    );
    const unhandled: unknown[] = [];
    const seen = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', seen);
    let release: () => void = () => undefined;
    const last = new Promise<void>((r) => (release = r));
    const f = fakeKube({
      listPools: () => ok([a!]),
      listDisks: () => ok(disks),
      // The first Event throws (a bug, or a crash the chaos tier injects) while a later delete is
      // still out: its rejection is caught where it starts, not reported as unhandled.
      recordEvent: (_args, nth) => {
        if (nth === 0) throw new Error('crash in recordEvent');
        return ok(undefined);
      },
      deleteDisk: async ([, name]) => {
        if (name === 'a-cache-z') await last;
        return ok(undefined);
      },
    });
    try {
      const settled = collectDisks(f.kube, NOW, testLog('gc')).then(
        (out) => (out.kind === 'done' ? out.deleted.length : out.kind),
        (e: unknown) => (e instanceof Error ? e.message : String(e)),
      );
      // The first deletes and the throwing Event settle while the last delete waits.
      await new Promise((r) => setTimeout(r, 20));
      expect(f.of('deleteDisk')).toHaveLength(3);
      expect(f.of('recordEvent')).toHaveLength(2);
      release();
      expect(await settled).toBe(3);
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
      // The throw stopped no other delete's Event.
      expect(f.of('recordEvent')).toHaveLength(3);
    } finally {
      process.off('unhandledRejection', seen);
    }
  });

  it('keeps the pass to GC_PARALLEL deletes in flight, its Events to as many of their own, and answers once every Event is done', async () => {
    const pools = named(['p0', 'p1', 'p2', 'p3', 'p4']);
    // 40 due disks a pool: 200 in all.
    const disks = pools.flatMap((q) =>
      Array.from({ length: 40 }, (_, j) =>
        disk(q, `${q.metadata.name}-cache-${j}`, { freeSince: at(-2 * HOUR) }),
      ),
    );
    let deleting = 0;
    let mostDeletes = 0;
    let recording = 0;
    let mostEvents = 0;
    let recorded = 0;
    const f = fakeKube({
      listPools: () => ok(pools),
      listDisks: () => ok(disks),
      deleteDisk: async () => {
        mostDeletes = Math.max(mostDeletes, ++deleting);
        await new Promise((r) => setTimeout(r, 2));
        deleting--;
        return ok(undefined);
      },
      recordEvent: async () => {
        mostEvents = Math.max(mostEvents, ++recording);
        await new Promise((r) => setTimeout(r, 5));
        recording--;
        recorded++;
        return ok(undefined);
      },
    });
    const out = await collectDisks(f.kube, NOW, testLog('gc'));
    expect(out.kind === 'done' ? out.deleted.length : out).toBe(200);
    expect(mostDeletes).toBe(GC_PARALLEL);
    expect(mostEvents).toBe(GC_PARALLEL);
    expect(recorded).toBe(200);
  });

  it('pages of GC_PAGE by default', async () => {
    const f = fakeKube({}, p);
    await collectDisks(f.kube, NOW, testLog('gc'));
    expect(f.of('listDisks').map((c) => plainArgs(c)[2])).toEqual([{ limit: GC_PAGE, lean: true }]);
  });
});

describe('collectDisks, a disk held by a member of another pool of the namespace (L3)', () => {
  // Pool a's free disk is past its ttl; a member of pool b, in the same namespace, references it.
  const [a, b] = named(['a', 'b']);
  const due = disk(a!, 'a-cache-old', { freeSince: at(-2 * HOUR) });
  const holder = vm(b!, 'b-1', { refs: [{ kind: 'VirtualDisk', name: 'a-cache-old' }] });
  const script = (): Partial<Script> => ({
    listPools: ([, page]) => paged([a!, b!])(page),
    listDisks: () => ok([due]),
    listVms: () => ok([holder]),
  });

  it('keeps it, and deletes it once nothing does, under the uid and resourceVersion listed', async () => {
    // Pages of one pool: the pools come apart, the holder's pool after the disk's.
    const f = fakeKube(script());
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 1);
    expect(out).toMatchObject({ kind: 'done', deleted: [], skipped: 0 });
    expect(f.of('listVms').map((c) => c.args[1])).toEqual(['']);
    expect(f.of('deleteDisk')).toEqual([]);
    const gone = fakeKube({ ...script(), listVms: () => ok([]) });
    const after = await collectDisks(gone.kube, NOW, testLog('gc'), 1);
    expect(after.kind === 'done' ? after.deleted.map((c) => c.name) : after).toEqual([
      'a-cache-old',
    ]);
    expect(gone.of('deleteDisk').map((c) => c.args[2])).toEqual([
      { uid: due.metadata.uid, resourceVersion: due.metadata.resourceVersion },
    ]);
  });
});
