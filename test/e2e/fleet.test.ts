/**
 * Fleet control end to end, with kubectl as a user types it: scale-in protection, deletion cost and
 * spread over nodes (the simulator places VMs on two nodes), the victims preview through the
 * aggregated API, scaledownwith refusing a protected VM, and drain before removal (drained, timed
 * out, cancelled by a scale-up). No resync tick runs here: an annotation a user or an agent sets on
 * a VM reaches reconcile-pool as a VM event, and a drain timeout is acted on by the recheck
 * reconcile-pool schedules at the deadline. `VMPOOL_E2E_TRANSCRIPT=1` prints what kubectl showed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBRESOURCES_GROUP, VERSION, keys } from '../../shared/api/index.js';
import { smallPool } from '../../local/guide.js';
import {
  scaleDownWithPath,
  startApiserverFacing,
  type ApiserverFacing,
} from './apiserver-facing.js';
import { cluster, create, dropNamespace, eventually, newNamespace, read } from './harness.js';
import { userOf } from './user.js';
import { members as readMembers, type Member } from './members.js';
import { startStack, type Stack } from './stack.js';

let ns = '';
let stack: Stack;
let facing: ApiserverFacing;
const NODES = ['node-a', 'node-b'];

beforeAll(async () => {
  ns = await newNamespace('fleet');
  stack = await startStack(ns, { nodes: NODES, resyncMs: 0 });
  facing = await startApiserverFacing(ns);
});
afterAll(async () => {
  await facing.stop();
  await stack.stop();
  await dropNamespace(ns);
});

/** kubectl in the test namespace, as a user types it. */
const kubectl = (args: string[], input?: string): Promise<string> =>
  userOf(ns).kubectl(args, input);

interface NodeMember extends Member {
  node?: string;
}

/** Members with their node (the test's Member has no status.nodeName). */
async function members(pool: string): Promise<NodeMember[]> {
  const out = JSON.parse(
    await cluster().kubectl(['get', 'vm', '-n', ns, '-l', `${keys.pool}=${pool}`, '-o', 'json']),
  ) as { items: Array<{ metadata: { name: string }; status?: { nodeName?: string } }> };
  const nodes = new Map(out.items.map((i) => [i.metadata.name, i.status?.nodeName]));
  return (await readMembers(ns, pool)).map((m) => {
    const node = nodes.get(m.name);
    return node === undefined ? m : { ...m, node };
  });
}

/** Waits for exactly `n` live Running members (none Terminating); their names, sorted. */
async function settled(pool: string, n: number, ms = 60_000): Promise<NodeMember[]> {
  return eventually(
    `${pool}: ${String(n)} Running members, none Terminating`,
    async () => {
      const all = await members(pool);
      return all.length === n && all.every((m) => !m.terminating && m.phase === 'Running')
        ? all
        : undefined;
    },
    ms,
  );
}

const status = (pool: string) => userOf(ns).status(pool);
const events = (reason: string) => userOf(ns).events(reason);
const scale = (pool: string, n: number) => userOf(ns).scale(pool, n);
const names = (ms: readonly Member[]) => ms.map((m) => m.name).sort();
const victimsPath = (pool: string, count: number) =>
  `/apis/${SUBRESOURCES_GROUP}/${VERSION}/namespaces/${ns}/virtualmachinepools/${pool}/victims?count=${String(count)}`;

describe('scale-in protection, deletion cost and spread', () => {
  it('a pool of 5: preview, 409 for a protected target, scale to 3 removes what the preview said, scale to 1 waits for protection', async () => {
    await create(
      'virtualmachinepools',
      ns,
      smallPool(ns, 'runners', (p) => (p.spec.replicas = 5)),
    );
    const five = await eventually('5 members placed on nodes', async () => {
      const ms = await settled('runners', 5);
      return ms.every((m) => m.node !== undefined) ? ms : undefined;
    });
    // The simulator spreads: three on one node, two on the other.
    const byNode = new Map<string, NodeMember[]>();
    for (const m of five) byNode.set(m.node!, [...(byNode.get(m.node!) ?? []), m]);
    const [full, light] = [...byNode.values()].sort((a, b) => b.length - a.length);
    expect([full!.length, light!.length]).toEqual([3, 2]);
    // Two protected on the full node, cost -100 on one of the light node.
    const [p1, p2, free] = full!;
    const [cheap, other] = light!;
    for (const m of [p1!, p2!]) await kubectl(['annotate', 'vm', m.name, `${keys.protected}=true`]);
    await kubectl(['annotate', 'vm', cheap!.name, `${keys.deletionCost}=-100`]);
    await kubectl([
      'get',
      'vm',
      '-l',
      `${keys.pool}=runners`,
      '-o',
      `custom-columns=NAME:.metadata.name,NODE:.status.nodeName,PROTECTED:.metadata.annotations.vmpool\\.virtualization\\.deckhouse\\.io/protected,COST:.metadata.annotations.vmpool\\.virtualization\\.deckhouse\\.io/deletion-cost`,
    ]);

    // The preview: the cheap one, then by spread the unprotected member of the full node.
    const preview = JSON.parse(await kubectl(['get', '--raw', victimsPath('runners', 2)])) as {
      victims: Array<{ name: string; reason: string; protected: boolean }>;
    };
    expect(preview.victims.map((v) => [v.name, v.reason])).toEqual([
      [cheap!.name, 'DeletionCost'],
      [free!.name, 'Spread'],
    ]);

    // scaledownwith of a protected VM: 409, nothing changed.
    let refused = '';
    try {
      await kubectl(
        ['create', '--raw', scaleDownWithPath(ns, 'runners'), '-f', '-'],
        JSON.stringify({ targets: [p1!.name] }),
      );
    } catch (err) {
      refused = (err as Error).message;
    }
    if (process.env.VMPOOL_E2E_TRANSCRIPT) console.log(`(refused) ${refused}`);
    expect(refused).toContain('Conflict');
    expect(refused).toContain(p1!.name);
    expect(refused).toContain(keys.protected);
    const after = await read('virtualmachinepools', ns, 'runners');
    expect((after?.spec as { replicas: number }).replicas).toBe(5);
    expect(
      (after?.metadata.annotations as Record<string, string> | undefined)?.[keys.scaleDownTargets],
    ).toBeUndefined();
    expect(names(await members('runners'))).toEqual(names(five));

    // Scale to 3: exactly the previewed victims go, never a protected one.
    await scale('runners', 3);
    const three = await settled('runners', 3);
    expect(names(three)).toEqual([p1!.name, p2!.name, other!.name].sort());

    // Scale to 1: the unprotected one goes, the rest waits, and the pool says why.
    await scale('runners', 1);
    const held = await eventually('held by protection', async () => {
      const s = await status('runners');
      const c = (s.conditions as Array<{ type: string; reason?: string }> | undefined)?.find(
        (x) => x.type === 'Progressing',
      );
      const ms = await settled('runners', 2);
      // Two members protected (PROTECTED), one surplus replica held because of them (HELD).
      return s.protectedReplicas === 2 &&
        s.heldReplicas === 1 &&
        c?.reason === 'ScaleDownBlockedByProtection'
        ? ms
        : undefined;
    });
    expect(names(held)).toEqual([p1!.name, p2!.name].sort());
    // -o wide: PROTECTED counts the protected members, HELD the surplus kept for them, and every
    // count column prints a number, 0 for the features this pool does not use (standby, healing).
    const [header = '', row = ''] = (await kubectl(['get', 'vmpool', 'runners', '-o', 'wide']))
      .trim()
      .split('\n');
    const cols = header.split(/\s+/);
    const cells = row.split(/\s+/);
    const cell = (name: string) => cells[cols.indexOf(name)];
    expect(
      ['PROTECTED', 'HELD', 'DRAINING', 'STANDBY', 'READY-STANDBY', 'UNHEALTHY'].map(cell),
    ).toEqual(['2', '1', '0', '0', '0', '0']);
    await kubectl([
      'get',
      'vmpool',
      'runners',
      '-o',
      `jsonpath={.status.conditions[?(@.type=="Progressing")].message}`,
    ]);
    // Removing one protection lets it proceed, with no other action.
    await kubectl(['annotate', 'vm', p2!.name, `${keys.protected}-`]);
    const one = await settled('runners', 1);
    expect(names(one)).toEqual([p1!.name]);
    await eventually('heldReplicas back to 0, one protected member left', async () => {
      const s = await status('runners');
      return s.heldReplicas === 0 && s.protectedReplicas === 1 ? true : undefined;
    });
  });
});

describe('drain before removal', () => {
  const drainPool = (name: string, replicas: number, drainTimeout: string) => {
    const p = smallPool(ns, name, (x) => (x.spec.replicas = replicas));
    return { ...p, spec: { ...p.spec, scaleDown: { drainTimeout } } };
  };
  const draining = async (pool: string): Promise<NodeMember[]> =>
    (await members(pool)).filter((m) => m.annotations[keys.drainRequested] !== undefined);

  it('marks the victim, waits for drained, then deletes it; a scale-up during a drain cancels it', async () => {
    await create('virtualmachinepools', ns, drainPool('desks', 3, '1h'));
    const start = await settled('desks', 3);
    await scale('desks', 2);
    const [victim] = await eventually('a member asked to drain', async () => {
      const d = await draining('desks');
      return d.length === 1 && (await status('desks')).drainingReplicas === 1 ? d : undefined;
    });
    await kubectl(['get', 'vmpool', 'desks', '-o', 'wide']);
    expect(await events('DrainRequested')).toEqual([expect.stringContaining(`"${victim!.name}"`)]);
    // It stays a member while it drains (three members for two replicas), however long we look.
    await new Promise((r) => setTimeout(r, 3000));
    expect(names(await members('desks'))).toEqual(names(start));
    await kubectl(['annotate', 'vm', victim!.name, `${keys.drained}=true`]);
    const two = await settled('desks', 2);
    expect(two.map((m) => m.name)).not.toContain(victim!.name);
    expect((await status('desks')).drainingReplicas).toBe(0);

    // Scale down again, then back up before the drain ends: the drain is cancelled, nothing created.
    await scale('desks', 1);
    const [again] = await eventually('another member asked to drain', async () => {
      const d = await draining('desks');
      return d.length === 1 ? d : undefined;
    });
    await scale('desks', 2);
    await eventually('the drain cancelled', async () =>
      (await draining('desks')).length === 0 && (await status('desks')).drainingReplicas === 0
        ? true
        : undefined,
    );
    await new Promise((r) => setTimeout(r, 2000));
    expect(names(await settled('desks', 2))).toEqual(names(two));
    expect(await events('DrainCancelled')).toEqual([expect.stringContaining(`"${again!.name}"`)]);
    await kubectl([
      'get',
      'events',
      '--field-selector',
      'involvedObject.name=desks',
      '--sort-by=.lastTimestamp',
    ]);
  });

  it('deletes a member that does not drain in time (DrainTimedOut)', async () => {
    await create('virtualmachinepools', ns, drainPool('quick', 2, '4s'));
    await settled('quick', 2);
    await scale('quick', 1);
    const [victim] = await eventually('a member asked to drain', async () => {
      const d = await draining('quick');
      return d.length === 1 ? d : undefined;
    });
    const asked = Date.parse(victim!.annotations[keys.drainRequested]!);
    const one = await settled('quick', 1, 30_000);
    const gone = Date.now();
    expect(one.map((m) => m.name)).not.toContain(victim!.name);
    // Not before the timeout (second precision), and not much after it.
    expect(gone - asked).toBeGreaterThanOrEqual(4000);
    expect(await events('DrainTimedOut')).toEqual([
      expect.stringContaining(`"${victim!.name}": not drained within drainTimeout 4s`),
    ]);
    await kubectl(['get', 'events', '--field-selector', 'reason=DrainTimedOut']);
  });
});
