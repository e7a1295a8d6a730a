/**
 * Warm standby, self-healing, the rollout budget and pause end to end, with kubectl as a user types
 * it, on the real control plane with the platform simulator (VMs boot after their disks are Ready;
 * VMs labelled `sim.vmpool.io/never-start=true` never reach Running). No resync tick runs: what
 * happens on time (a startup timeout, a back-off) is the recheck reconcile-pool schedules.
 * `VMPOOL_E2E_TRANSCRIPT=1` prints what kubectl showed.
 */
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION, keys } from '../../shared/api/index.js';
import { smallPool } from '../../local/guide.js';
import {
  scaleDownWithPath,
  startApiserverFacing,
  type ApiserverFacing,
} from './apiserver-facing.js';
import { cluster, create, dropNamespace, eventually, newNamespace } from './harness.js';
import { members, type Member } from './members.js';
import { startStack, type Stack } from './stack.js';
import { userOf } from './user.js';

const NEVER_START = 'sim.vmpool.io/never-start';
let ns = '';
let stack: Stack;
let facing: ApiserverFacing;

beforeAll(async () => {
  ns = await newNamespace('lifecycle');
  stack = await startStack(ns, { resyncMs: 0, neverStart: { label: `${NEVER_START}=true` } });
  facing = await startApiserverFacing(ns);
});
afterAll(async () => {
  await facing.stop();
  await stack.stop();
  await dropNamespace(ns);
});

const user = () => userOf(ns);
const live = async (pool: string): Promise<Member[]> =>
  (await members(ns, pool)).filter((m) => !m.terminating);
const standbyOf = (ms: readonly Member[]) => ms.filter((m) => m.labels[keys.standby] === 'true');
const replicasOf = (ms: readonly Member[]) => ms.filter((m) => m.labels[keys.standby] !== 'true');
const names = (ms: readonly Member[]) => ms.map((m) => m.name).sort();
type Cond = { type: string; status: string; reason?: string; message?: string };
const condition = (s: Record<string, unknown>, type: string): Cond | undefined =>
  ((s.conditions ?? []) as Cond[]).find((c) => c.type === type);

/** Creates pool `name` of `replicas` from the user guide's small pool, `extra` in its spec. */
async function createPool(
  name: string,
  replicas: number,
  extra: object,
  edit: (p: ReturnType<typeof smallPool>) => void = () => undefined,
): Promise<void> {
  await create(
    'virtualmachinepools',
    ns,
    smallPool(ns, name, (p) => {
      p.spec.replicas = replicas;
      Object.assign(p.spec, extra);
      edit(p);
    }),
  );
}

/** Waits for `replicas` Running replicas and `standby` standby members in `phase`, nothing else. */
async function settled(pool: string, replicas: number, standby = 0, phase = 'Stopped') {
  return eventually(
    `${pool}: ${String(replicas)} Running replicas and ${String(standby)} ${phase} standby members`,
    async () => {
      const all = await members(ns, pool);
      const r = replicasOf(all);
      const s = standbyOf(all);
      return all.every((m) => !m.terminating) &&
        r.length === replicas &&
        r.every((m) => m.phase === 'Running') &&
        s.length === standby &&
        s.every((m) => m.phase === phase)
        ? all
        : undefined;
    },
    60_000,
  );
}

describe('warm standby', () => {
  it('promotes stopped standby members on a scale-up, then refills the standby', async () => {
    await createPool('runners', 2, { standby: { replicas: 2, state: 'Stopped' } });
    const before = await settled('runners', 2, 2);
    const spare = names(standbyOf(before));
    const policies = await user().kubectl([
      'get',
      'vm',
      '-l',
      `${keys.standby}=true`,
      '-o',
      'jsonpath={.items[*].spec.runPolicy}',
    ]);
    expect(policies.trim().split(' ')).toEqual(['AlwaysOff', 'AlwaysOff']);
    await user().kubectl(['get', 'vm', '-L', keys.standby]);
    await user().kubectl(['get', 'vmpool', 'runners', '-o', 'wide']);
    expect(await user().status('runners')).toMatchObject({
      replicas: 2,
      readyReplicas: 2,
      standbyReplicas: 2,
      readyStandbyReplicas: 2,
    });

    await user().scale('runners', 4);
    const after = await settled('runners', 4, 2);
    // The two standby members became replicas; no replica was created for the scale-up.
    expect(names(replicasOf(after))).toEqual([...names(replicasOf(before)), ...spare].sort());
    expect(names(standbyOf(after)).some((n) => spare.includes(n))).toBe(false);
    const promoted = await user().events('StandbyPromoted');
    expect(promoted).toHaveLength(2);
    for (const n of spare) expect(promoted.join('\n')).toContain(`"${n}"`);
    await user().kubectl(['get', 'vm', '-L', keys.standby]);
    await user().kubectl(['get', 'vmpool', 'runners', '-o', 'wide']);
    // /scale and an HPA see the replicas only.
    const scale = JSON.parse(
      await user().kubectl([
        'get',
        '--raw',
        `/apis/${GROUP}/${VERSION}/namespaces/${ns}/virtualmachinepools/runners/scale`,
      ]),
    ) as { status: { replicas: number; selector: string } };
    expect(scale.status.replicas).toBe(4);
    expect(scale.status.selector).toContain(`${keys.standby} notin (true)`);
  });
});

describe('self-healing', () => {
  it('replaces a VM that never starts after startupTimeout, backs off while replacements fail, heals once fixed', async () => {
    await createPool('broken', 1, { healing: { startupTimeout: '4s' } }, (p) => {
      Object.assign(p.spec.virtualMachineTemplate, {
        metadata: { labels: { [NEVER_START]: 'true' } },
      });
    });
    const [first] = await eventually('a member Starting', async () => {
      const ms = await live('broken');
      return ms.length === 1 && ms[0]!.phase === 'Starting' ? ms : undefined;
    });
    // Replaced after the timeout, under a fresh name.
    const replacement = await eventually('the stuck member replaced', async () => {
      const ms = await members(ns, 'broken');
      if (ms.some((m) => m.name === first!.name)) return undefined;
      return ms.sort((a, b) => a.created.localeCompare(b.created))[0];
    });
    // Judged by the API server's clock, as the timeout is (from the member's creation, in whole
    // seconds): the test's own clock saw the member Starting only after polling for it, which on a
    // loaded machine may be seconds after its creation. Replaced at once would be 0-1 s apart.
    expect(Date.parse(replacement.created) - Date.parse(first!.created)).toBeGreaterThanOrEqual(
      3000,
    );
    expect(await user().events('ReplicaUnhealthy')).toEqual([
      expect.stringContaining(`"${first!.name}" is not Running within startupTimeout 4s`),
    ]);
    expect(await user().events('ReplicaReplaced')).toEqual([
      expect.stringContaining(`"${first!.name}"`),
    ]);
    // The replacement fails too: the pool backs off and says so.
    const failing = await eventually(
      'Healing=False',
      async () => {
        const c = condition(await user().status('broken'), 'Healing');
        return c?.status === 'False' ? c : undefined;
      },
      60_000,
    );
    expect(failing.reason).toBe('ReplacementsFailing');
    await user().kubectl([
      'get',
      'vmpool',
      'broken',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Healing")].message}',
    ]);
    // Fix the template: the next replacement starts, and the pool is healthy again.
    await user().kubectl([
      'patch',
      'vmpool',
      'broken',
      '--type=json',
      '-p',
      JSON.stringify([
        {
          op: 'remove',
          path: `/spec/virtualMachineTemplate/metadata/labels/${NEVER_START.replace('/', '~1')}`,
        },
      ]),
    ]);
    await eventually(
      'one Running member and Healing=True',
      async () => {
        const s = await user().status('broken');
        const ms = await live('broken');
        return ms.length === 1 &&
          ms[0]!.phase === 'Running' &&
          condition(s, 'Healing')?.status === 'True' &&
          s.unhealthyReplicas === 0
          ? true
          : undefined;
      },
      90_000,
    );
    await user().kubectl([
      'get',
      'events',
      '--field-selector',
      'involvedObject.name=broken',
      '--sort-by=.lastTimestamp',
    ]);
  });
});

describe('healing circuit breaker', () => {
  it('an all-unhealthy pool trips the breaker: it loses at most one member and says why', async () => {
    await createPool('allbad', 4, { healing: { startupTimeout: '4s' } }, (p) => {
      Object.assign(p.spec.virtualMachineTemplate, {
        metadata: { labels: { [NEVER_START]: 'true' } },
      });
    });
    const replaced = async () =>
      (await user().events('ReplicaReplaced')).filter((m) => m.includes('"allbad-'));
    const tripped = await eventually(
      'Healing=False TooManyUnhealthy',
      async () => {
        const c = condition(await user().status('allbad'), 'Healing');
        return c?.reason === 'TooManyUnhealthy' ? c : undefined;
      },
      60_000,
    );
    expect(tripped.status).toBe('False');
    expect(tripped.message).toMatch(/^[34] of 4 replicas are not Running within startupTimeout 4s/);
    expect(tripped.message).toContain('spec.healing.maxUnhealthy 50% (default) tolerates (2)');
    await user().kubectl([
      'get',
      'vmpool',
      'allbad',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Healing")].message}',
    ]);
    // Well past the timeout and a back-off round: still at most one replaced, four members kept.
    await new Promise((r) => setTimeout(r, 10_000));
    expect((await replaced()).length).toBeLessThanOrEqual(1);
    await eventually('four members (a replaced one is recreated)', async () =>
      (await live('allbad')).length === 4 ? true : undefined,
    );
    expect(condition(await user().status('allbad'), 'Healing')?.reason).toBe('TooManyUnhealthy');
    await user().kubectl(['delete', 'vmpool', 'allbad', '--wait=false']);
  });
});

/** Watches a pool's members and keeps the most found not Running at any one event. */
async function restartWatch(pool: string) {
  const phases = new Map<string, string>();
  let max = 0;
  let events = 0;
  const restarted = new Set<string>();
  const kc = new KubeConfig();
  kc.loadFromFile(cluster().info.kubeconfigPath);
  type Seen = {
    metadata: { name: string; deletionTimestamp?: string };
    status?: { phase?: string };
  };
  const ctl = await new Watch(kc).watch(
    `/apis/${GROUP}/${VERSION}/namespaces/${ns}/virtualmachines`,
    { labelSelector: `${keys.pool}=${pool}` },
    (type: string, o: Seen) => {
      events++;
      if (type === 'DELETED' || o.metadata.deletionTimestamp !== undefined)
        phases.delete(o.metadata.name);
      else phases.set(o.metadata.name, o.status?.phase ?? 'Pending');
      if (o.status?.phase === 'Stopping') restarted.add(o.metadata.name);
      max = Math.max(max, [...phases.values()].filter((p) => p !== 'Running').length);
    },
    () => undefined,
  );
  return {
    stop: () => {
      ctl.abort();
    },
    figures: () => ({ max, events, restarted: restarted.size }),
  };
}

describe('rollout budget', () => {
  it('a rollout of 6 with maxUnavailable 2 never has more than 2 restarting', async () => {
    await createPool('desks', 6, { rollout: { maxUnavailable: 2 } }, (p) => {
      Object.assign(p.spec.virtualMachineTemplate.spec, {
        disruptions: { restartApprovalMode: 'Automatic' },
      });
    });
    await settled('desks', 6);
    const before = (await user().status('desks')).desiredTemplateHash;
    const watch = await restartWatch('desks');
    try {
      await user().kubectl([
        'patch',
        'vmpool',
        'desks',
        '--type=merge',
        '-p',
        '{"spec":{"virtualMachineTemplate":{"spec":{"cpu":{"cores":4}}}}}',
      ]);
      await eventually(
        'all 6 updated and Running',
        async () => {
          const s = await user().status('desks');
          const ms = await live('desks');
          return s.desiredTemplateHash !== before &&
            s.updatedReplicas === 6 &&
            condition(s, 'Synced')?.status === 'True' &&
            ms.length === 6 &&
            ms.every((m) => m.phase === 'Running')
            ? true
            : undefined;
        },
        90_000,
      );
    } finally {
      watch.stop();
    }
    const f = watch.figures();
    if (process.env.VMPOOL_E2E_TRANSCRIPT)
      console.log(
        `watcher: ${String(f.events)} events, at most ${String(f.max)} not Running at once, ${String(f.restarted)} restarted`,
      );
    expect(f, 'every member restarted, at most two at once').toMatchObject({
      restarted: 6,
      max: 2,
    });
    await user().kubectl(['get', 'vmpool', 'desks', '-o', 'wide']);
  });
});

/** kubectl patch of spec.paused. */
const paused = (pool: string, on: boolean) =>
  user().kubectl([
    'patch',
    'vmpool',
    pool,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { paused: on } }),
  ]);

describe('pause', () => {
  it('holds through a scale and a VM deletion (scaledownwith refused), unpausing converges', async () => {
    await createPool('held', 2, {});
    const two = await settled('held', 2);
    await paused('held', true);
    await eventually('Paused=True', async () =>
      condition(await user().status('held'), 'Paused')?.status === 'True' ? true : undefined,
    );
    await user().scale('held', 4);
    await user().kubectl(['delete', 'vm', two[0]!.name, '--wait=false']);
    let refused = '';
    try {
      await user().kubectl(
        ['create', '--raw', scaleDownWithPath(ns, 'held'), '-f', '-'],
        JSON.stringify({ targets: [two[1]!.name] }),
      );
    } catch (err) {
      refused = (err as Error).message;
    }
    if (process.env.VMPOOL_E2E_TRANSCRIPT) console.log(`(refused) ${refused}`);
    expect(refused).toContain('is paused');
    // Several reconciles (a resync tick each) and the platform's own updates change nothing.
    for (let i = 0; i < 5; i++) {
      await stack.ping(stack.reconcileUrl);
      await new Promise((r) => setTimeout(r, 600));
    }
    expect(names(await live('held'))).toEqual([two[1]!.name]);
    expect(await user().status('held')).toMatchObject({ replicas: 1 });
    await user().kubectl(['get', 'vmpool', 'held', '-o', 'wide']);
    await paused('held', false);
    const four = await settled('held', 4);
    expect(names(four)).toContain(two[1]!.name);
    expect(condition(await user().status('held'), 'Paused')).toBeUndefined();
  });
});
