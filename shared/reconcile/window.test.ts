import { describe, expect, it } from 'vitest';
import type { VirtualMachineClaim, VirtualMachinePool } from '../api/index.js';
import { keys } from '../api/index.js';
import type { Failure, Listed, PageRequest } from '../kube/index.js';
import {
  WINDOW_NAMESPACES,
  WINDOW_OBJECTS,
  claimsAt,
  listAt,
  objectsOf,
  placesOf,
  poolPages,
  windowsOf,
} from './window.js';
import { pool } from '../../test/unit/builders.js';
import { fail, fakeKube, ok, plainArgs } from '../../test/unit/fake-kube.js';

const inNs = (ns: string, name: string): VirtualMachinePool => {
  const p = pool({ name, uid: `uid-${ns}-${name}` });
  return { ...p, metadata: { ...p.metadata, namespace: ns } };
};

const expired: Failure = { ok: false, reason: 'transient', code: 410, message: 'continue expired' };

/** Pages of `all` by `limit`, the token being the offset; `expire` makes the tokens it names fail. */
function paged(all: VirtualMachinePool[], expire: (token: string) => boolean = () => false) {
  return ([, page]: [string?, PageRequest?]): Listed<VirtualMachinePool> => {
    const from = Number(page?.continue ?? '0');
    if (page?.continue !== undefined && expire(page.continue)) return expired;
    const to = from + (page?.limit ?? all.length);
    const value = all.slice(from, to);
    return to < all.length ? { ok: true, value, next: String(to) } : { ok: true, value };
  };
}

async function drain(gen: AsyncGenerator<Listed<VirtualMachinePool>>) {
  const pages: (string[] | string)[] = [];
  for await (const p of gen)
    pages.push(p.ok ? p.value.map((x) => x.metadata.name ?? '') : p.message);
  return pages;
}

describe('poolPages', () => {
  const all = ['a', 'b', 'c', 'd', 'e'].map((n) => inNs('ci', n));

  it('gives the pools a page at a time, as the continue tokens chain them', async () => {
    const f = fakeKube({ listPools: paged(all) });
    expect(await drain(poolPages(f.kube, 'ci', 2))).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(f.of('listPools').map(plainArgs)).toEqual([
      ['ci', { limit: 2 }],
      ['ci', { limit: 2, continue: '2' }],
      ['ci', { limit: 2, continue: '4' }],
    ]);
  });

  it('reads the next page while the caller works on this one, never more than one ahead', async () => {
    const f = fakeKube({ listPools: paged(all) });
    const gen = poolPages(f.kube, 'ci', 2);
    const first = await gen.next();
    expect(first.value).toMatchObject({ ok: true });
    // The caller holds the first window: the second page is already asked for, the third is not.
    expect(f.of('listPools').map((c) => plainArgs(c)[1])).toEqual([
      { limit: 2 },
      { limit: 2, continue: '2' },
    ]);
    await gen.next();
    expect(f.of('listPools')).toHaveLength(3);
  });

  it('asks for the next page as soon as the awaited page says its token, and never two ahead of the caller', async () => {
    // As the funnel does: `ahead` is called once the body is read, before the page is answered.
    const started: string[] = [];
    let release = (): void => undefined;
    const f = fakeKube({
      listPools: async (args) => {
        const [, page] = args;
        started.push(page?.continue ?? 'first');
        const answer = paged(all)(args);
        // The body is read.
        await Promise.resolve();
        if (answer.ok && answer.next !== undefined) page?.ahead?.(answer.next);
        // The first page's items take a while to parse.
        if (page?.continue === undefined) await new Promise<void>((r) => (release = r));
        return answer;
      },
    });
    const gen = poolPages(f.kube, 'ci', 2);
    const first = gen.next();
    await new Promise((r) => setTimeout(r, 5));
    // The first page is still being parsed, and the second is already asked for.
    expect(started).toEqual(['first', '2']);
    release();
    expect((await first).value).toMatchObject({ ok: true });
    await new Promise((r) => setTimeout(r, 5));
    // The caller holds the first page: the second told its token while nobody awaited it, so the
    // third waits for the caller to ask.
    expect(started).toEqual(['first', '2']);
    await gen.next();
    expect(started).toEqual(['first', '2', '4']);
    expect(await drain(gen)).toEqual([['e']]);
    expect(started).toEqual(['first', '2', '4']);
  });

  it('a caller that stops early leaves no unhandled rejection behind the page read ahead', async () => {
    const unhandled: unknown[] = [];
    const seen = (e: unknown): void => {
      unhandled.push(e);
    };
    process.on('unhandledRejection', seen);
    try {
      let calls = 0;
      const f = fakeKube({
        listPools: (args) => {
          calls++;
          if (calls > 1) throw new Error('crash injected');
          return paged(all)(args);
        },
      });
      for await (const page of poolPages(f.kube, 'ci', 2)) {
        expect(page.ok).toBe(true);
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
      expect(calls).toBe(2);
      expect(unhandled).toEqual([]);
      // A caller that goes on is given what the read threw, as before.
      calls = 0;
      await expect(drain(poolPages(f.kube, 'ci', 2))).rejects.toThrow('crash injected');
    } finally {
      process.off('unhandledRejection', seen);
    }
  });

  it('restarts after an expired token and leaves out the pools already given', async () => {
    let expiredOnce = false;
    const f = fakeKube({
      listPools: paged(all, (t) => {
        if (t !== '4' || expiredOnce) return false;
        expiredOnce = true;
        return true;
      }),
    });
    expect(await drain(poolPages(f.kube, undefined, 2))).toEqual([
      ['a', 'b'],
      ['c', 'd'],
      [],
      [],
      ['e'],
    ]);
  });

  it('cuts a page longer than asked for into windows of the limit', async () => {
    const f = fakeKube({ listPools: () => ok(all) });
    expect(await drain(poolPages(f.kube, 'ci', 2))).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(f.of('listPools')).toHaveLength(1);
    const none = fakeKube({ listPools: () => ok([]) });
    expect(await drain(poolPages(none.kube, 'ci', 2))).toEqual([[]]);
  });

  it('gives up with the failure after three restarts, and at once on any other failure', async () => {
    const f = fakeKube({ listPools: paged(all, () => true) });
    const pages = await drain(poolPages(f.kube, undefined, 2));
    expect(pages.at(-1)).toBe('continue expired');
    expect(f.of('listPools')).toHaveLength(8);
    const g = fakeKube({ listPools: () => fail('forbidden', 'no list') });
    expect(await drain(poolPages(g.kube, undefined))).toEqual(['no list']);
  });
});

describe('windowsOf', () => {
  /** A pool of `replicas` members, each with `templates` disks (none: no disk templates). */
  const sized = (name: string, replicas: number, status?: number): VirtualMachinePool => {
    const p = pool({ name, uid: `uid-${name}`, replicas });
    return status === undefined ? p : { ...p, status: { replicas: status } };
  };
  const names = (ws: VirtualMachinePool[][]) => ws.map((w) => w.map((p) => p.metadata.name));

  it('estimates a pool by its larger of desired and reported members, standby and disks', () => {
    const templates = pool().spec.virtualDiskTemplates.length;
    expect(objectsOf(sized('a', 10))).toBe(1 + 10 * (1 + templates));
    expect(objectsOf(sized('a', 0, 40))).toBe(1 + 40 * (1 + templates));
    const standby = sized('s', 2);
    standby.spec.standby = { replicas: 3, state: 'Stopped' };
    expect(objectsOf(standby)).toBe(1 + 5 * (1 + templates));
  });

  it('keeps small pools to one window of the limit', () => {
    const small = Array.from({ length: 250 }, (_, i) => sized(`p${i}`, 3));
    expect(250 * objectsOf(small[0] as VirtualMachinePool)).toBeLessThanOrEqual(WINDOW_OBJECTS);
    expect(windowsOf(small, 250)).toHaveLength(1);
    expect(windowsOf(small, 100).map((w) => w.length)).toEqual([100, 100, 50]);
  });

  it('cuts large pools into windows under the budget, a pool over it alone, none lost or moved', () => {
    const per = objectsOf(sized('x', 1000));
    expect(per).toBeGreaterThan(WINDOW_OBJECTS / 2);
    const pools = [
      sized('a', 1),
      sized('b', 1000),
      sized('c', 1000),
      sized('d', 5000),
      sized('e', 1),
      sized('f', 1),
    ];
    const ws = windowsOf(pools, 250);
    expect(names(ws)).toEqual([['a', 'b'], ['c'], ['d'], ['e', 'f']]);
    for (const w of ws.filter((w) => w.length > 1))
      expect(w.reduce((n, p) => n + objectsOf(p), 0)).toBeLessThanOrEqual(WINDOW_OBJECTS);
  });

  it('gives one empty window for no pools', () => {
    expect(windowsOf([], 250)).toEqual([[]]);
  });

  it('is what poolPages gives: a page of large pools comes as several windows', async () => {
    const big = ['a', 'b', 'c'].map((n) => {
      const p = inNs('ci', n);
      return { ...p, spec: { ...p.spec, replicas: 1000 } };
    });
    const f = fakeKube({ listPools: paged(big) });
    expect(await drain(poolPages(f.kube, 'ci', 250))).toEqual([['a'], ['b'], ['c']]);
    expect(f.of('listPools')).toHaveLength(1);
  });
});

describe('placesOf', () => {
  it('lists namespace by namespace with each namespace its own pools, up to a bound', async () => {
    expect(placesOf([inNs('a', 'p'), inNs('b', 'q'), inNs('a', 'r')])).toEqual([
      { namespace: 'a', selector: `${keys.poolUid} in (uid-a-p,uid-a-r)` },
      { namespace: 'b', selector: `${keys.poolUid} in (uid-b-q)` },
    ]);
    const many = Array.from({ length: WINDOW_NAMESPACES + 1 }, (_, i) => inNs(`n${i}`, 'p'));
    const places = placesOf(many);
    expect(places).toHaveLength(1);
    expect(places[0]?.namespace).toBeUndefined();
    expect(places[0]?.selector).toBe(
      `${keys.poolUid} in (${many.map((p) => p.metadata.uid ?? '').join(',')})`,
    );
    // A list that fails at one place fails the window's list.
    const f = fakeKube({ listVms: ([ns]) => (ns === 'b' ? fail('transient', 'b down') : ok([])) });
    const got = await listAt(placesOf([inNs('a', 'p'), inNs('b', 'q')]), (ns, sel) =>
      f.kube.listVms(ns, sel),
    );
    expect(got.ok ? 'ok' : got.message).toBe('b down');
  });

  it('keeps the claims naming a pool of the window and every unreadable one', async () => {
    const claim = (ns: string, name: string, poolName: string): VirtualMachineClaim => ({
      apiVersion: 'vmpool.virtualization.deckhouse.io/v1alpha1',
      kind: 'VirtualMachineClaim',
      metadata: { namespace: ns, name, uid: `c-${name}` },
      spec: { poolName },
    });
    const f = fakeKube({
      listClaims: ([ns]) =>
        ns === 'a'
          ? {
              ok: true,
              value: [claim('a', 'mine', 'p'), claim('a', 'other', 'x')],
              malformed: [
                { kind: 'VirtualMachineClaim', namespace: 'a', name: 'bad', uid: 'c-bad' },
              ] as never,
            }
          : ok([claim('b', 'theirs', 'q')]),
    });
    const pools = [inNs('a', 'p'), inNs('b', 'q')];
    const got = await claimsAt(f.kube, placesOf(pools), pools);
    const names = (key: string) =>
      got.ok ? got.value.byPool.get(key)?.map((c) => c.metadata.name) : undefined;
    expect([names('a/p'), names('b/q'), names('a/x')]).toEqual([['mine'], ['theirs'], undefined]);
    expect(got.ok && got.value.unreadable).toEqual(['c-bad']);
  });
});
