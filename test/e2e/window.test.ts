/**
 * The resync tick and the disk-GC pass read a scope a window at a time (shared/reconcile/window.ts):
 * real continue tokens between pages of pools, and label selectors of the form `pool-uid in (…)`,
 * namespace by namespace or across the cluster, answered by the real API server, as deployed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import type { VirtualMachinePool } from '../../shared/api/index.js';
import type { Kube } from '../../shared/kube/index.js';
import {
  WINDOW_NAMESPACES,
  listAt,
  placesOf,
  poolPages,
  reconcileScope,
} from '../../shared/reconcile/index.js';
import { smallPool } from '../../local/guide.js';
import { testLog } from '../logs.js';
import { create, dropNamespace, functionKube, newNamespace } from './harness.js';
import { listObjects } from './members.js';

const spaces: string[] = [];
let kube: Kube;

beforeAll(async () => {
  kube = await functionKube('reconcile-pool');
  // One more namespace than a window lists namespace by namespace.
  for (let i = 0; i <= WINDOW_NAMESPACES; i++) spaces.push(await newNamespace(`win${i}`));
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
    for (const ns of spaces.slice(1)) {
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
    for (const ns of spaces.slice(2))
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

async function firstSpacePools(): Promise<VirtualMachinePool[]> {
  const got = await kube.listPools(spaces[0] ?? '');
  return got.ok ? got.value : [];
}
