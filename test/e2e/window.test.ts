/**
 * The resync tick reads a scope a window at a time (shared/reconcile/window.ts): real continue
 * tokens between pages of pools, and label selectors of the form `pool-uid in (…)`, namespace by
 * namespace or across the cluster; the disk-GC pass lists pools and disks page by page across the
 * cluster. All answered by the real API server, as deployed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, keys } from '../../shared/api/index.js';
import type { VirtualMachinePool } from '../../shared/api/index.js';
import type { Kube } from '../../shared/kube/index.js';
import {
  WINDOW_NAMESPACES,
  collectDisks,
  listAt,
  placesOf,
  poolPages,
  reconcileScope,
} from '../../shared/reconcile/index.js';
import { runnersVm, smallPool } from '../../local/guide.js';
import { testLog } from '../logs.js';
import {
  cluster,
  create,
  dropNamespace,
  functionKube,
  newNamespace,
  read,
  res,
} from './harness.js';
import type { Obj } from './harness.js';
import { listObjects } from './members.js';

const spaces: string[] = [];
let kube: Kube;

beforeAll(async () => {
  kube = await functionKube('reconcile-pool');
  // One more namespace than a window lists namespace by namespace, and one for the GC.
  for (let i = 0; i <= WINDOW_NAMESPACES; i++) spaces.push(await newNamespace(`win${i}`));
  spaces.push(await newNamespace('wingc'));
});
afterAll(async () => {
  for (const ns of spaces) await dropNamespace(ns);
});

const deps = (window: number) => ({
  kube,
  now: () => new Date(),
  rand: Math.random,
  log: testLog('window'),
  window,
});

describe('a scope read a window at a time', () => {
  it('a namespace of five pools in windows of two: each pool reconciled once, then a quiet tick of lists only', async () => {
    const ns = spaces[0] ?? '';
    const names = ['p0', 'p1', 'p2', 'p3', 'p4'];
    for (const name of names)
      await create(
        'virtualmachinepools',
        ns,
        smallPool(ns, name, (p) => (p.spec.replicas = 1)),
      );
    const pages: string[][] = [];
    for await (const page of poolPages(kube, ns, 2))
      pages.push(page.ok ? page.value.map((p) => p.metadata.name ?? '') : [page.message]);
    expect(pages).toEqual([['p0', 'p1'], ['p2', 'p3'], ['p4']]);

    const first = await reconcileScope(deps(2), { kind: 'namespace', namespace: ns });
    expect(first.map((o) => [o.pool, o.outcome.kind])).toEqual(
      names.map((n) => [`${ns}/${n}`, 'converged']),
    );
    for (const name of names)
      expect(await listObjects(ns, 'virtualmachines', `${keys.pool}=${name}`)).toHaveLength(1);

    const before = kube.counts();
    const second = await reconcileScope(deps(2), { kind: 'namespace', namespace: ns });
    expect(second.map((o) => o.outcome)).toEqual(
      names.map(() => ({ kind: 'converged', passes: 1, actions: 0 })),
    );
    const after = kube.counts();
    const delta = (verb: string) => (after[verb] ?? 0) - (before[verb] ?? 0);
    // Three windows: a page of pools, then their VMs, disks and claims; no get, no write.
    expect(delta('list')).toBe(3 * 4);
    expect(delta('get')).toBe(0);
    expect(Object.keys(after).filter((k) => !k.includes(':') && delta(k) > 0)).toEqual(['list']);
  });

  it('above the namespace bound a window lists across the cluster with its uids: exactly its pools’ objects', async () => {
    const pools: VirtualMachinePool[] = [];
    for (const ns of spaces.slice(1, WINDOW_NAMESPACES + 1)) {
      await create(
        'virtualmachinepools',
        ns,
        smallPool(ns, 'q', (p) => (p.spec.replicas = 1)),
      );
      const got = await kube.listPools(ns);
      if (got.ok) pools.push(...got.value);
    }
    // A pool in every namespace but the first: the bound is crossed only with all of them.
    expect(pools).toHaveLength(WINDOW_NAMESPACES);
    const out = await reconcileScope(deps(3), { kind: 'namespace', namespace: spaces[1] ?? '' });
    expect(out.map((o) => o.outcome.kind)).toEqual(['converged']);
    for (const ns of spaces.slice(2, WINDOW_NAMESPACES + 1))
      await reconcileScope(deps(3), { kind: 'namespace', namespace: ns });
    const withFirst = [...pools, ...(await firstSpacePools())];
    const places = placesOf(withFirst);
    expect(places.map((p) => p.namespace)).toEqual([undefined]);
    const vms = await listAt(places, (ns, sel) => kube.listVms(ns, sel));
    const expected = withFirst.length;
    expect(vms.ok && vms.value.length).toBe(expected);
    // Leave one pool out: its member is no longer listed.
    const fewer = await listAt(placesOf(withFirst.slice(1)), (ns, sel) => kube.listVms(ns, sel));
    expect(fewer.ok && fewer.value.map((v) => v.metadata.labels?.[keys.poolUid])).not.toContain(
      withFirst[0]?.metadata.uid,
    );
    expect(fewer.ok && fewer.value.length).toBe(expected - 1);
  });
});

describe('a GC pass a window at a time (L3)', () => {
  it('keeps a due disk of one pool that a member of another pool uses, pools and disks read a page of one at a time, and collects it once free', async () => {
    const ns = spaces.at(-1) ?? '';
    const retain = (p: ReturnType<typeof smallPool>) => {
      p.spec.replicas = 0;
      p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep: 0, ttl: '1s' };
    };
    const a = await create('virtualmachinepools', ns, smallPool(ns, 'a', retain));
    const b = await create('virtualmachinepools', ns, smallPool(ns, 'b', retain));
    const owner = (pool: typeof a) => ({
      apiVersion: API_VERSION,
      kind: 'VirtualMachinePool',
      name: pool.metadata.name as string,
      uid: pool.metadata.uid as string,
      controller: true,
      blockOwnerDeletion: true,
    });
    // Pool a's Retain disk, stamped free an hour ago: due, by a's own lists alone.
    await create('virtualdisks', ns, {
      kind: 'VirtualDisk',
      metadata: {
        name: 'a-cache-shared',
        labels: {
          [keys.poolUid]: a.metadata.uid,
          [keys.pool]: 'a',
          [keys.diskTemplate]: 'cache',
        },
        annotations: { [keys.freeSince]: new Date(Date.now() - 3_600_000).toISOString() },
        ownerReferences: [owner(a)],
      },
      spec: { persistentVolumeClaim: { size: '1Gi' } },
    });
    // A member of pool b holds it (a disk moved by hand, a restored backup).
    const member = runnersVm(ns, 'b-holder');
    member.spec.blockDeviceRefs = [{ kind: 'VirtualDisk', name: 'a-cache-shared' }];
    await create('virtualmachines', ns, {
      ...member,
      metadata: {
        ...member.metadata,
        labels: { [keys.poolUid]: b.metadata.uid, [keys.pool]: 'b' },
        ownerReferences: [owner(b)],
      },
    });
    const gc = await functionKube('disk-gc-tick');
    const log = testLog('window-gc');
    // Pages of one object: a's due disk is known before b is read, and the holder is seen only
    // because a pass with a due disk reads its namespace's VMs whole before deleting.
    const pages: string[][] = [];
    for await (const page of poolPages(gc, ns, 1))
      pages.push(page.ok ? page.value.map((p) => p.metadata.name ?? '') : [page.message]);
    expect(pages).toEqual([['a'], ['b']]);
    expect(await collectDisks(gc, new Date(), log, 1)).toMatchObject({ kind: 'done', deleted: [] });
    expect(await read('virtualdisks', ns, 'a-cache-shared')).toBeDefined();
    // The holder gone, the same pass collects the disk.
    await cluster().custom.deleteNamespacedCustomObject({
      ...res('virtualmachines', ns),
      name: 'b-holder',
    });
    const out = await collectDisks(gc, new Date(), log, 1);
    expect(out.kind === 'done' ? out.deleted.map((c) => c.name) : out).toEqual(['a-cache-shared']);
  });
});

/** A pool of no replicas keeping `keep` free cache disks warm, collecting the rest after 1 s. */
async function keepPool(ns: string, keep: number) {
  return create(
    'virtualmachinepools',
    ns,
    smallPool(ns, `keep${String(keep)}`, (p) => {
      p.spec.replicas = 0;
      p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep, ttl: '1s' };
    }),
  );
}

/** A cache disk of `pool`, stamped free `hoursAgo` hours ago. */
async function freeDisk(
  ns: string,
  pool: Awaited<ReturnType<typeof keepPool>>,
  name: string,
  hoursAgo: number,
) {
  const poolName = pool.metadata.name as string;
  return create('virtualdisks', ns, {
    kind: 'VirtualDisk',
    metadata: {
      name,
      labels: {
        [keys.poolUid]: pool.metadata.uid,
        [keys.pool]: poolName,
        [keys.diskTemplate]: 'cache',
      },
      annotations: { [keys.freeSince]: new Date(Date.now() - hoursAgo * 3_600_000).toISOString() },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: 'VirtualMachinePool',
          name: poolName,
          uid: pool.metadata.uid as string,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { persistentVolumeClaim: { size: '1Gi' } },
  });
}

/**
 * disk-gc-tick's Kube, recording its calls in order (`listVms <namespace>` or the method), and
 * running `before` ahead of each.
 */
async function recordingKube(
  calls: string[],
  before: (method: string, args: unknown[]) => Promise<void> = () => Promise.resolve(),
): Promise<Kube> {
  const gc = await functionKube('disk-gc-tick');
  return new Proxy(gc, {
    get: (target, prop: keyof Kube) => {
      const method: unknown = Reflect.get(target, prop);
      if (typeof method !== 'function') return method;
      return async (...args: unknown[]) => {
        calls.push(prop === 'listVms' ? `listVms ${String(args[0])}` : prop);
        await before(prop, args);
        return Reflect.apply(method, target, args) as unknown;
      };
    },
  });
}

describe('a GC pass namespace by namespace as its lists pass them', () => {
  it("plans a namespace once both lists are past it, in the API server's key order (x-b/ before x/ before x0/), each keep counting every free disk", async () => {
    const base = await newNamespace('wgk');
    // Namespaces whose names sort otherwise than their keys: "x-b" < "x" < "x0" only with the
    // slash. One more after them, so the list reads on past the last asserted on.
    const more = [`${base}-b`, `${base}0`, `${base}1`];
    for (const name of more)
      // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
      await cluster().core.createNamespace({ body: { metadata: { name } } });
    spaces.push(base, ...more);
    const ours = [`${base}-b`, base, `${base}0`, `${base}1`];
    for (const ns of ours) {
      const pool = await keepPool(ns, 1);
      // Two free disks each, on pages of their own: the newer stays warm, the older goes.
      await freeDisk(ns, pool, 'keep1-cache-older', 2);
      await freeDisk(ns, pool, 'keep1-cache-newer', 1);
    }
    // The calls the pass makes, in order: which namespace's VMs it read, and each disk page asked.
    const calls: string[] = [];
    const out = await collectDisks(await recordingKube(calls), new Date(), testLog('window-gc'), 1);
    expect(out.kind).toBe('done');
    const deleted = out.kind === 'done' ? out.deleted : [];
    expect(
      deleted
        .filter((c) => ours.includes(c.namespace))
        .map((c) => `${c.namespace}/${c.name}`)
        .sort(),
    ).toEqual(ours.map((ns) => `${ns}/keep1-cache-older`).sort());
    for (const ns of ours) {
      expect(await read('virtualdisks', ns, 'keep1-cache-newer')).toBeDefined();
      expect(await read('virtualdisks', ns, 'keep1-cache-older')).toBeUndefined();
    }
    // Each of the first two in key order is planned while the disk list still reads on (two pages
    // of each namespace after it).
    const lastDiskPage = calls.lastIndexOf('listDisks');
    for (const ns of ours.slice(0, 2)) {
      expect(calls.indexOf(`listVms ${ns}`)).toBeGreaterThan(-1);
      expect(calls.indexOf(`listVms ${ns}`)).toBeLessThan(lastDiskPage);
    }
  });

  it('a disk taken back into use after its page was read and before its delete stays: the delete carries the resourceVersion listed (409)', async () => {
    const ns = await newNamespace('wgr');
    spaces.push(ns);
    const pool = await keepPool(ns, 0);
    await freeDisk(ns, pool, 'keep0-cache-due', 2);
    // A concurrent writer: as the pass reads the namespace's VMs (its disks listed, its plan made),
    // a reconcile reuses the disk, taking its free-since stamp off.
    const calls: string[] = [];
    const kube = await recordingKube(calls, async (method, args) => {
      if (method !== 'listVms' || args[0] !== ns) return;
      const d = (await read('virtualdisks', ns, 'keep0-cache-due')) as Obj;
      const annotations = { ...(d.metadata.annotations as Record<string, string>) };
      delete annotations[keys.freeSince];
      await cluster().custom.replaceNamespacedCustomObject({
        ...res('virtualdisks', ns),
        name: 'keep0-cache-due',
        body: { ...d, metadata: { ...d.metadata, annotations } },
      });
    });
    const out = await collectDisks(kube, new Date(), testLog('window-gc'), 1);
    expect(out.kind).toBe('done');
    expect(calls).toContain('deleteDisk');
    expect(out.kind === 'done' ? out.deleted.filter((c) => c.namespace === ns) : out).toEqual([]);
    expect(out.kind === 'done' ? out.skipped : 0).toBeGreaterThanOrEqual(1);
    expect(await read('virtualdisks', ns, 'keep0-cache-due')).toBeDefined();
  });
});

async function firstSpacePools(): Promise<VirtualMachinePool[]> {
  const got = await kube.listPools(spaces[0] ?? '');
  return got.ok ? got.value : [];
}
