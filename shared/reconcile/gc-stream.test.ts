import { describe, expect, it } from 'vitest';
import type { Listed, PageRequest } from '../kube/index.js';
import { keys, malformedOf } from '../api/index.js';
import type { VirtualDisk, VirtualMachinePool } from '../api/index.js';
import { at, disk, HOUR, NOW, poolWithReclaim } from '../../test/unit/builders.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import type { FakeKube } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';
import { collectDisks } from './gc.js';

// Pools of a namespace each, keeping the newest free disk warm and collecting the rest past 30 min.
const keepOne = (namespace: string): VirtualMachinePool =>
  poolWithReclaim(
    { onScaleDown: 'Retain', keep: 1, ttl: '30m' },
    { namespace, name: `pool-${namespace}`, uid: `uid-pool-${namespace}` },
  );
const keepNone = (namespace: string): VirtualMachinePool =>
  poolWithReclaim(
    { onScaleDown: 'Retain', keep: 0, ttl: '30m' },
    { namespace, name: `pool-${namespace}`, uid: `uid-pool-${namespace}` },
  );
const free = (p: VirtualMachinePool, name: string, hoursAgo: number): VirtualDisk =>
  disk(p, name, { freeSince: at(-hoursAgo * HOUR) });

const isPage = <T>(p: readonly T[] | Listed<T>): p is readonly T[] => Array.isArray(p);

/** Pages as given (an array each); a `Listed` in place of a page is answered as it is. */
function pages<T>(
  given: ReadonlyArray<readonly T[] | Listed<T>>,
): (page: PageRequest | undefined) => Listed<T> {
  return (page) => {
    const i = Number(page?.continue ?? '0');
    const p: readonly T[] | Listed<T> = given[i] ?? [];
    if (!isPage(p)) return p;
    return i + 1 < given.length ? { ok: true, value: [...p], next: String(i + 1) } : ok([...p]);
  };
}

/** Where in the fake's calls the first call matching came, and where the last `listDisks` came. */
const indexOf = (f: FakeKube, method: string, name: string): number =>
  f.calls.findIndex((c) => c.method === method && c.args[1] === name);
const lastList = (f: FakeKube): number => f.calls.findLastIndex((c) => c.method === 'listDisks');
const deletedNames = (f: FakeKube): unknown[] => f.of('deleteDisk').map((c) => c.args[1]);

/** A pass at pages of one object: `pools` in one page, the disks in `diskPages`. */
async function passOver(
  pools: VirtualMachinePool[],
  diskPages: ReadonlyArray<readonly VirtualDisk[] | Listed<VirtualDisk>>,
) {
  const f = fakeKube({
    listPools: () => ok(pools),
    listDisks: ([, , page]) => pages(diskPages)(page),
  });
  return { f, out: await collectDisks(f.kube, NOW, testLog('gc'), 1) };
}

describe('collectDisks, namespace by namespace as the lists pass them', () => {
  it('plans and deletes in a namespace before the disk list has read the namespaces after it', async () => {
    const spaces = ['a', 'b', 'c', 'd', 'e'];
    const pools = spaces.map(keepNone);
    const { f, out } = await passOver(
      pools,
      pools.map((p) => [free(p, `${p.metadata.namespace}-old`, 2)]),
    );
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name).sort() : out).toEqual(
      spaces.map((s) => `${s}-old`),
    );
    // Namespace a is whole once the disk list gave b's page: a's delete goes out while the list
    // reads on (a page ahead at most), not after its last page.
    expect(indexOf(f, 'deleteDisk', 'a-old')).toBeGreaterThan(-1);
    expect(indexOf(f, 'deleteDisk', 'a-old')).toBeLessThan(lastList(f));
    // a's VMs are read before its delete, and after its disks.
    expect(indexOf(f, 'listVms', '')).toBeLessThan(indexOf(f, 'deleteDisk', 'a-old'));
  });

  it('waits for a namespace continued on the next page: its keep counts every free disk', async () => {
    const a = keepOne('a');
    const b = keepNone('b');
    // a's older disk on the first page, its newer one on the second: the newer one stays warm.
    const { f, out } = await passOver(
      [a, b],
      [[free(a, 'a-older', 3)], [free(a, 'a-newer', 2)], [free(b, 'b-old', 2)]],
    );
    expect(out).toMatchObject({ kind: 'done', skipped: 0 });
    expect(deletedNames(f).sort()).toEqual(['a-older', 'b-old']);
  });

  it('waits for the pool list too: a namespace whose pool comes on a later page is planned with it', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map(keepNone);
    const f = fakeKube({
      listPools: ([, page]) => pages([[a!], [b!], [c!]])(page),
      listDisks: () => ok([free(a!, 'a-old', 2), free(b!, 'b-old', 2), free(c!, 'c-old', 2)]),
    });
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 1);
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name).sort() : out).toEqual([
      'a-old',
      'b-old',
      'c-old',
    ]);
  });

  it('sorts namespaces as the API server keys them: a-b/… before a/…', async () => {
    const ab = keepNone('a-b');
    const a = keepOne('a');
    const z = keepNone('z');
    const { f, out } = await passOver(
      [ab, a, z],
      [
        [free(ab, 'ab-old', 2)],
        [free(a, 'a-older', 3)],
        [free(a, 'a-newer', 2)],
        [free(z, 'z-old', 2)],
      ],
    );
    expect(out).toMatchObject({ kind: 'done' });
    expect(deletedNames(f).sort()).toEqual(['a-older', 'ab-old', 'z-old']);
    // In order, so a-b is planned as soon as a's first page is read, before the list ends.
    const abVms = f.calls.findIndex((c) => c.method === 'listVms' && c.args[0] === 'a-b');
    expect(abVms).toBeGreaterThan(-1);
    expect(abVms).toBeLessThan(lastList(f));
  });

  it('hands over nothing more once a list goes back on its order, and plans the rest whole at its end', async () => {
    const [a, b, c] = [keepNone('a'), keepOne('b'), keepNone('c')];
    // The pools are all read, so a is planned when b's first page comes, with its pool alone.
    // Then a goes back on the order: b, continued after c's page, is planned only at the end, with
    // both its disks (had it been planned when c's page came, only b-older would count, stay warm,
    // and nothing of b be deleted). a's late disk is not collected this pass: the safe side.
    const { f, out } = await passOver(
      [a, b, c],
      [
        [free(b, 'b-older', 3)],
        [free(a, 'a-old', 2)],
        [free(c, 'c-old', 2)],
        [free(b, 'b-newer', 2)],
      ],
    );
    expect(out).toMatchObject({ kind: 'done' });
    expect(deletedNames(f).sort()).toEqual(['b-older', 'c-old']);
    expect(f.calls.findIndex((c) => c.method === 'deleteDisk')).toBeGreaterThan(lastList(f));
  });

  it("a tenant's disk that does not parse, on a later page of its namespace, still holds back its pool; the next namespace's pool is collected", async () => {
    const [a, b] = [keepNone('a'), keepNone('b')];
    const odd = malformedOf(
      'VirtualDisk',
      { metadata: { name: 'a-odd', namespace: 'a', labels: { [keys.poolUid]: a.metadata.uid } } },
      'spec.persistentVolumeClaim.size: Invalid input',
    );
    // a's due disk on the first page, its unreadable one on the second, b's on the third.
    const { f, out } = await passOver(
      [a, b],
      [
        [free(a, 'a-old', 2)],
        { ok: true, value: [], malformed: [odd], next: '2' },
        [free(b, 'b-old', 2)],
      ],
    );
    expect(out).toMatchObject({ kind: 'done' });
    expect(deletedNames(f)).toEqual(['b-old']);
  });

  it('a list restarted after a namespace was planned: that namespace is not planned again, the others from the new read', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map(keepNone);
    let read = 0;
    const f = fakeKube({
      listPools: () => ok([a!, b!, c!]),
      listDisks: ([, , page]) => {
        read++;
        if (read === 3) return { ...fail('transient', 'expired'), code: 410 };
        if (read < 3) return pages([[free(a!, 'a-old', 2)], [free(b!, 'b-old', 2)], []])(page);
        // The new read: b's disk was taken back into use (no longer free) in between.
        return ok([free(a!, 'a-old', 2), disk(b!, 'b-old'), free(c!, 'c-old', 2)]);
      },
    });
    const out = await collectDisks(f.kube, NOW, testLog('gc'), 1);
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name).sort() : out).toEqual([
      'a-old',
      'c-old',
    ]);
    expect(deletedNames(f).sort()).toEqual(['a-old', 'c-old']);
  });

  it('a list that fails after a namespace was planned: its deletes stand, the rest waits for the retry', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map(keepNone);
    const { f, out } = await passOver(
      [a!, b!, c!],
      [[free(a!, 'a-old', 2)], [free(b!, 'b-old', 2)], fail('transient', 'etcd timeout')],
    );
    expect(out).toEqual({
      kind: 'retry',
      reason: 'etcd timeout',
    });
    expect(deletedNames(f)).toEqual(['a-old']);
  });
});
