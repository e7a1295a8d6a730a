/**
 * scale-down-with end to end: the user guide's `kubectl create --raw …/scaledownwith` through the
 * kube-apiserver's aggregation layer, as real users with client certificates, with reconcile-pool
 * and the simulator running so the named replicas really go away; a watch records every deletion.
 */
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { Agent } from 'node:https';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, SUBRESOURCES_GROUP, VERSION, keys } from '../../shared/api/index.js';
import {
  httpsJson,
  planePki,
  reportLatency,
  scaleDownWithPath,
  startApiserverFacing,
  testUser,
  type ApiserverFacing,
  type TestUser,
} from './apiserver-facing.js';
import {
  cluster,
  create,
  dropNamespace,
  eventually,
  newNamespace,
  read,
  type Obj,
} from './harness.js';
import { members as readMembers } from './members.js';
import { smallPool } from '../../local/guide.js';
import { runnersVm } from '../../local/guide.js';
import { startStack, type Stack } from './stack.js';

let ns = '';
let stack: Stack;
let facing: ApiserverFacing;
let alice: TestUser;
let bob: TestUser;
let stopWatch: () => void = () => undefined;
/** Every VM seen Terminating or deleted, by pool label ('' for non-members). */
const deleted = new Map<string, Set<string>>();

beforeAll(async () => {
  ns = await newNamespace('sdw');
  stack = await startStack(ns);
  facing = await startApiserverFacing(ns);
  alice = testUser(`alice-${ns}`);
  bob = testUser(`bob-${ns}`);
  await cluster().applyManifest([
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pool-scaler', namespace: ns },
      rules: [
        {
          apiGroups: [SUBRESOURCES_GROUP],
          resources: ['virtualmachinepools/scaledownwith'],
          verbs: ['create'],
        },
        { apiGroups: [GROUP], resources: ['virtualmachinepools'], verbs: ['get'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'pool-scaler-alice', namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pool-scaler' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: alice.name }],
    },
  ]);
  const kc = new KubeConfig();
  kc.loadFromFile(cluster().info.kubeconfigPath);
  const ctl = await new Watch(kc).watch(
    `/apis/${GROUP}/${VERSION}/namespaces/${ns}/virtualmachines`,
    {},
    (type: string, obj: { metadata: Obj['metadata'] }) => {
      const m = obj.metadata as {
        name: string;
        deletionTimestamp?: string;
        labels?: Record<string, string>;
      };
      if (type !== 'DELETED' && m.deletionTimestamp === undefined) return;
      const pool = m.labels?.[keys.pool] ?? '';
      const set = deleted.get(pool) ?? new Set<string>();
      set.add(m.name);
      deleted.set(pool, set);
    },
    () => undefined,
  );
  stopWatch = () => {
    ctl.abort();
  };
});
afterAll(async () => {
  stopWatch();
  await facing.stop();
  await stack.stop();
  await dropNamespace(ns);
});

function pool(name: string, edit?: Parameters<typeof smallPool>[2]) {
  return smallPool(ns, name, edit);
}

const members = (poolName: string) => readMembers(ns, poolName);

async function replicas(poolName: string): Promise<number | undefined> {
  const p = await read('virtualmachinepools', ns, poolName);
  return (p?.spec as { replicas?: number } | undefined)?.replicas;
}

/**
 * Waits until the pool has exactly `n` members, none Terminating, all Running, none of `gone`, and no
 * recorded targets left (a pool at the right count may still be about to swap a target for a new
 * member); their names, sorted.
 */
async function converged(
  poolName: string,
  n: number,
  gone: readonly string[] = [],
): Promise<string[]> {
  const ms = await eventually(
    `${poolName} to converge to ${String(n)} Running members without ${gone.join(', ')}`,
    async () => {
      const all = await members(poolName);
      const p = await read('virtualmachinepools', ns, poolName);
      const recorded = (p?.metadata.annotations as Record<string, string> | undefined)?.[
        keys.scaleDownTargets
      ];
      const ok =
        all.length === n &&
        all.every((m) => !m.terminating && m.phase === 'Running' && !gone.includes(m.name)) &&
        recorded === undefined;
      return ok ? all : undefined;
    },
    90_000,
  );
  return ms.map((m) => m.name).sort();
}

/** Oldest first (ties by name): NewestFirst would never pick these, so they prove the targeting. */
async function oldest(poolName: string, k: number): Promise<string[]> {
  const ms = await members(poolName);
  ms.sort((a, b) =>
    a.created < b.created ? -1 : a.created > b.created ? 1 : a.name < b.name ? -1 : 1,
  );
  return ms.slice(0, k).map((m) => m.name);
}

function deletedOf(poolName: string): string[] {
  return [...(deleted.get(poolName) ?? [])].sort();
}

/** The user guide's command, as `user`; the Status it printed. */
async function scaleDownWith(
  user: TestUser | undefined,
  poolName: string,
  body: object,
): Promise<{ status: string; code: number; message: string; details?: { causes?: unknown[] } }> {
  const args = ['create', '--raw', scaleDownWithPath(ns, poolName), '-f', '-'];
  const out = user
    ? await user.kubectl(args, JSON.stringify(body))
    : await cluster().kubectl(args, JSON.stringify(body));
  return JSON.parse(out) as { status: string; code: number; message: string };
}

/** Like {@link scaleDownWith} but must fail; kubectl's stderr. */
async function refusedScaleDownWith(
  user: TestUser | undefined,
  poolName: string,
  body: object,
): Promise<string> {
  try {
    await scaleDownWith(user, poolName, body);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('scaledownwith succeeded but should have been refused');
}

/** `kubectl scale` up by `inc` relative to what it reads, retrying lost races (--current-replicas). */
async function scaleUpBy(poolName: string, inc: number): Promise<void> {
  let last = '';
  for (let i = 0; i < 30; i++) {
    const r = (await replicas(poolName)) ?? 0;
    try {
      await cluster().kubectl([
        'scale',
        `virtualmachinepool/${poolName}`,
        '-n',
        ns,
        `--current-replicas=${String(r)}`,
        `--replicas=${String(r + inc)}`,
      ]);
      return;
    } catch (err) {
      last = (err as Error).message;
      if (!/Operation cannot be fulfilled|[Ee]xpected/.test(last)) throw err;
    }
  }
  throw new Error(`scale up of ${poolName} kept losing races: ${last}`);
}

/** Waits a little and asserts the pool did not move: same replicas, same members, nothing deleted. */
async function unchanged(poolName: string, replicasBefore: number, membersBefore: string[]) {
  await new Promise((r) => setTimeout(r, 1500));
  expect(await replicas(poolName)).toBe(replicasBefore);
  const ms = await members(poolName);
  expect(
    ms
      .filter((m) => !m.terminating)
      .map((m) => m.name)
      .sort(),
  ).toEqual([...membersBefore].sort());
  expect(ms).toHaveLength(membersBefore.length);
  expect(deletedOf(poolName)).toEqual([]);
}

describe('scaledownwith through the aggregation layer (user guide, reference §8)', () => {
  it('removes exactly the named replicas of a NewestFirst pool and shrinks it (as alice)', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('nf', (p) => (p.spec.replicas = 4)),
    );
    const before = await converged('nf', 4);
    const targets = await oldest('nf', 2);
    const status = await scaleDownWith(alice, 'nf', { targets });
    expect(status).toMatchObject({ status: 'Success', code: 201, message: 'replicas 4 -> 2' });
    expect(await replicas('nf')).toBe(2);
    const after = await converged('nf', 2, targets);
    expect(after).toEqual(before.filter((n) => !targets.includes(n)));
    await eventually('both targets seen deleted', () =>
      Promise.resolve(deletedOf('nf').length === 2 ? true : undefined),
    );
    expect(deletedOf('nf')).toEqual([...targets].sort());
  });

  it('removes exactly the named replica of an Explicit pool (the pool webhook lets it through)', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('ex', (p) => {
        p.spec.replicas = 3;
        p.spec.scaleDownPolicy = 'Explicit';
      }),
    );
    const before = await converged('ex', 3);
    const [target] = before.slice(1, 2);
    const status = await scaleDownWith(alice, 'ex', { targets: [target] });
    expect(status).toMatchObject({ status: 'Success', code: 201, message: 'replicas 3 -> 2' });
    const after = await converged('ex', 2, [target!]);
    expect(after).toEqual(before.filter((n) => n !== target));
    expect(deletedOf('ex')).toEqual([target]);
  });

  it('refuses a non-member or missing target with 400 and changes nothing', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('strict', (p) => (p.spec.replicas = 2)),
    );
    const before = await converged('strict', 2);
    await create('virtualmachines', ns, runnersVm(ns, 'stray-vm'));
    const stray = await refusedScaleDownWith(alice, 'strict', {
      targets: [before[0], 'stray-vm'],
    });
    expect(stray).toContain('BadRequest');
    expect(stray).toContain(
      'target VirtualMachine "stray-vm" does not belong to VirtualMachinePool "strict"',
    );
    // A member of another pool is not a member either.
    const other = await refusedScaleDownWith(alice, 'strict', {
      targets: [before[0], (await members('nf')).find((m) => !m.terminating)!.name],
    });
    expect(other).toContain('does not belong to VirtualMachinePool "strict"');
    const missing = await refusedScaleDownWith(alice, 'strict', {
      targets: [before[1], 'no-such-vm'],
    });
    expect(missing).toContain(`target VirtualMachine "no-such-vm" not found in namespace "${ns}"`);
    await unchanged('strict', 2, before);
    expect(deletedOf('')).toEqual([]);
    expect(await read('virtualmachines', ns, 'stray-vm')).toBeDefined();
  });

  it('counts duplicate targets once', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('dup', (p) => (p.spec.replicas = 3)),
    );
    const before = await converged('dup', 3);
    const [a, b] = before;
    const status = await scaleDownWith(alice, 'dup', { targets: [a, a, b, a] });
    expect(status).toMatchObject({ status: 'Success', code: 201, message: 'replicas 3 -> 1' });
    expect(status.details?.causes).toEqual([
      { reason: 'removed', field: a, message: `${a!}: removed` },
      { reason: 'duplicate', field: a, message: `${a!}: duplicate` },
      { reason: 'removed', field: b, message: `${b!}: removed` },
      { reason: 'duplicate', field: a, message: `${a!}: duplicate` },
    ]);
    expect(await replicas('dup')).toBe(1);
    expect(await converged('dup', 1, [a!, b!])).toEqual([before[2]]);
    expect(deletedOf('dup')).toEqual([a, b].sort());
  });

  it('changes nothing with "dryRun": ["All"]', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('dry', (p) => (p.spec.replicas = 2)),
    );
    const before = await converged('dry', 2);
    const status = await scaleDownWith(alice, 'dry', { targets: [before[0]], dryRun: ['All'] });
    expect(status).toMatchObject({ status: 'Success', code: 201 });
    expect(status.message).toContain('dry run: nothing changed (would set replicas 2 -> 1)');
    await unchanged('dry', 2, before);
    const p = await read('virtualmachinepools', ns, 'dry');
    expect(
      (p?.metadata.annotations as Record<string, string> | undefined)?.[keys.scaleDownTargets],
    ).toBeUndefined();
  });
});

describe('scaledownwith authentication and authorization', () => {
  let before: string[] = [];
  const body = () => ({ targets: [before[0]] });

  beforeAll(async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('authz', (p) => (p.spec.replicas = 2)),
    );
    before = await converged('authz', 2);
  });

  it('refuses bob (no grant) with 403 and changes nothing', async () => {
    const stderr = await refusedScaleDownWith(bob, 'authz', body());
    expect(stderr).toContain('Forbidden');
    expect(stderr).toContain(
      `User "${bob.name}" cannot create resource "virtualmachinepools/scaledownwith"`,
    );
    await unchanged('authz', 2, before);
  });

  it('checks the user itself too: front-proxy certificate naming bob → 403 from the server', async () => {
    const { frontProxy } = planePki();
    const res = await httpsJson({
      url: `https://127.0.0.1:${String(facing.scaleDownPort)}${scaleDownWithPath(ns, 'authz')}`,
      ca: facing.caPem,
      client: frontProxy,
      headers: { 'X-Remote-User': bob.name, 'X-Remote-Group': 'system:authenticated' },
      body: body(),
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', code: 403, reason: 'Forbidden' });
    await unchanged('authz', 2, before);
  });

  it('a group named "a,system:masters" is one group, not system:masters (impersonated through the API server)', async () => {
    // The API server forwards the group as one X-Remote-Group line; split on its comma, it would
    // make bob a cluster admin.
    const args = ['create', '--raw', scaleDownWithPath(ns, 'authz'), '-f', '-'];
    const as = ['--as', bob.name, '--as-group', 'a,system:masters'];
    const err = await cluster()
      .kubectl([...as, ...args], JSON.stringify(body()))
      .then(
        () => '',
        (e: unknown) => (e as Error).message,
      );
    expect(err).toContain('Forbidden');
    expect(err).toContain(`User "${bob.name}" cannot create`);
    await unchanged('authz', 2, before);
  });

  it('refuses forged X-Remote-* headers without the front-proxy certificate (401)', async () => {
    const url = `https://127.0.0.1:${String(facing.scaleDownPort)}${scaleDownWithPath(ns, 'authz')}`;
    const forged = { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' };
    const bare = await httpsJson({ url, ca: facing.caPem, headers: forged, body: body() });
    expect(bare.status).toBe(401);
    expect(JSON.parse(bare.body)).toMatchObject({ kind: 'Status', code: 401 });
    // A certificate the API server trusts for users is still not the front proxy's.
    const { admin } = planePki();
    const wrongCa = await httpsJson({
      url,
      ca: facing.caPem,
      client: admin,
      headers: forged,
      body: body(),
    });
    expect(wrongCa.status).toBe(401);
    await unchanged('authz', 2, before);
  });

  it('lets alice (granted create on virtualmachinepools/scaledownwith) remove a replica', async () => {
    const status = await scaleDownWith(alice, 'authz', body());
    expect(status).toMatchObject({ status: 'Success', code: 201, message: 'replicas 2 -> 1' });
    expect(await converged('authz', 1, [before[0]!])).toEqual([before[1]]);
    expect(deletedOf('authz')).toEqual([before[0]]);
  });
});

describe('scaledownwith racing kubectl scale up', () => {
  for (const policy of ['NewestFirst', 'Explicit'] as const) {
    it(`never deletes anything but the targets, and replicas add up (${policy})`, async () => {
      const name = `race-${policy.toLowerCase()}`;
      await create(
        'virtualmachinepools',
        ns,
        pool(name, (p) => {
          p.spec.replicas = 3;
          p.spec.scaleDownPolicy = policy;
        }),
      );
      let live = await converged(name, 3);
      const allTargets = new Set<string>();
      for (let round = 0; round < 4; round++) {
        const start = live.length;
        const inc = 1 + (round % 2);
        // Two distinct targets, one of them named twice.
        const targets = [live[round % live.length]!, live[(round + 1) % live.length]!];
        const distinct = new Set(targets).size;
        for (const t of targets) allTargets.add(t);
        const sdw = () =>
          scaleDownWith(alice, name, { targets: [...targets, targets[0]] }).then((s) => {
            expect(s).toMatchObject({ status: 'Success', code: 201 });
          });
        // Alternate who starts first; both are in flight together either way.
        await Promise.all(
          round % 2 === 0 ? [sdw(), scaleUpBy(name, inc)] : [scaleUpBy(name, inc), sdw()],
        );
        const expected = start + inc - distinct;
        expect(await replicas(name)).toBe(expected);
        live = await converged(name, expected, targets);
        expect(deletedOf(name).every((d) => allTargets.has(d))).toBe(true);
      }
      await eventually(`${name}: every target seen deleted`, () =>
        Promise.resolve(deletedOf(name).length === allTargets.size ? true : undefined),
      );
      expect(deletedOf(name)).toEqual([...allTargets].sort());
    });
  }
});

describe('scaledownwith latency', () => {
  it('serves 200 dry-run scaledownwith calls through kube-apiserver', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('lat', (p) => (p.spec.replicas = 1)),
    );
    const [member] = await converged('lat', 1);
    const { admin, servingCaPem } = planePki();
    const path = scaleDownWithPath(ns, 'lat');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const handlerBefore = facing.timings.get(path)?.length ?? 0;
    const endToEnd: number[] = [];
    const codes = new Map<number, number>();
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      const res = await httpsJson({
        url: `${cluster().info.server}${path}`,
        ca: servingCaPem,
        client: admin,
        agent,
        body: { targets: [member], dryRun: ['All'] },
      });
      endToEnd.push(performance.now() - t0);
      codes.set(res.status, (codes.get(res.status) ?? 0) + 1);
    }
    agent.destroy();
    const handler = (facing.timings.get(path) ?? []).slice(handlerBefore);
    reportLatency('scaledownwith dryRun through kube-apiserver (end to end)', endToEnd);
    reportLatency('scale-down-with handler (front-proxy authn + SAR + reads)', handler);
    expect(Object.fromEntries(codes)).toEqual({ 201: 200 });
    expect(handler).toHaveLength(200);
    expect(await replicas('lat')).toBe(1);
    expect(deletedOf('lat')).toEqual([]);
  });
});
