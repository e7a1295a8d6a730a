/**
 * reconcile-pool and disk-gc-tick end to end: the real ApiServerSource adapter delivers events over
 * HTTP, the platform simulator plays the VM and disk controllers, kubectl is typed as a user would.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { parseManifests } from '../../local/controlplane/crds.js';
import { keys } from '../../shared/api/index.js';
import {
  cluster,
  create,
  dropNamespace,
  eventMessages,
  eventually,
  newNamespace,
  read,
} from './harness.js';
import { listObjects, members as readMembers, openIntent, type Member } from './members.js';
import { runnersVm, smallPool } from '../../local/guide.js';
import { startStack, type Stack } from './stack.js';

let ns = '';
let stack: Stack;

beforeAll(async () => {
  ns = await newNamespace('rec');
  stack = await startStack(ns);
});
afterAll(async () => {
  await stack.stop();
  await dropNamespace(ns);
});

const list = (plural: string, selector: string) => listObjects(ns, plural, selector);
const members = (pool: string) => readMembers(ns, pool);

async function disks(pool: string) {
  return (await list('virtualdisks', `${keys.pool}=${pool}`)).map((o) => {
    const m = o.metadata;
    return {
      name: m.name as string,
      uid: m.uid as string,
      template: ((m.labels ?? {}) as Record<string, string>)[keys.diskTemplate],
      owner: ((m.ownerReferences ?? []) as Array<{ kind: string; name: string }>)[0],
      freeSince: ((m.annotations ?? {}) as Record<string, string>)[keys.freeSince],
      size: ((o.spec as { persistentVolumeClaim?: { size?: string } }).persistentVolumeClaim ?? {})
        .size,
      terminating: m.deletionTimestamp !== undefined,
    };
  });
}

async function status(pool: string) {
  const p = await read('virtualmachinepools', ns, pool);
  return (p?.status ?? {}) as {
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    restartPendingReplicas?: number;
    selector?: string;
    intent?: unknown;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}

/** Waits until the pool has exactly `n` live members, all Running, and a converged status. */
async function converged(pool: string, n: number, phase = 'Running', timeoutMs = 60_000) {
  return eventually(
    `${pool} to converge to ${n} ${phase} members`,
    async () => {
      const ms = await members(pool);
      const st = await status(pool);
      const ok =
        ms.length === n &&
        ms.every((m) => !m.terminating && m.phase === phase) &&
        st.replicas === n &&
        openIntent(st.intent, ms) === undefined;
      return ok ? ms : undefined;
    },
    timeoutMs,
  );
}

function pool(name: string, patch?: Parameters<typeof smallPool>[2]) {
  return smallPool(ns, name, patch);
}

const kubectl = (args: string[], input?: string) => cluster().kubectl([...args, '-n', ns], input);

describe('reconcile-pool end to end', () => {
  it('converges a new pool to N replicas, each with its own disks, and reports status', async () => {
    await create('virtualmachinepools', ns, pool('conv'));
    const ms = await converged('conv', 3);
    const ds = await disks('conv');
    for (const m of ms) {
      expect(m.name).toMatch(/^conv-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
      expect(m.refs[0]).toBe(`${m.name}-root`);
      expect(m.refs[1]).toMatch(/^conv-cache-[bcdfghjklmnpqrstvwxz2456789]{6}$/);
      expect(m.refs[2]).toBe('tools-iso');
      expect(ds.find((d) => d.name === `${m.name}-root`)?.owner).toMatchObject({
        kind: 'VirtualMachine',
        name: m.name,
      });
      expect(ds.find((d) => d.name === m.refs[1])?.owner).toMatchObject({
        kind: 'VirtualMachinePool',
        name: 'conv',
      });
    }
    const st = await eventually('ready status', async () => {
      const s = await status('conv');
      return s.readyReplicas === 3 ? s : undefined;
    });
    expect(st.selector).toMatch(new RegExp(`^${keys.poolUid}=`));
    expect(st.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'True',
      reason: 'AllReplicasReady',
    });
    expect(st.conditions?.find((c) => c.type === 'Progressing')).toBeUndefined();
    expect(st.conditions?.find((c) => c.type === 'Synced')).toMatchObject({
      status: 'True',
      reason: 'PoolSynced',
    });
    expect(st.updatedReplicas).toBe(3);
  });

  it('scales with kubectl: up, then down NewestFirst removing the newest', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('newest', (p) => (p.spec.replicas = 2)),
    );
    const first = (await converged('newest', 2)).map((m) => m.name).sort();
    // No pause: a scale-up often lands in the same second as the members before it, and the
    // scale-down must still remove the newcomers (creationTimestamp alone would tie).
    let ties = 0;
    for (let round = 0; round < 3; round++) {
      await kubectl(['scale', 'virtualmachinepool/newest', '--replicas=4']);
      const four = await converged('newest', 4);
      expect(four.map((m) => m.name)).toEqual(expect.arrayContaining(first));
      const [olds, news] = [
        four.filter((m) => first.includes(m.name)),
        four.filter((m) => !first.includes(m.name)),
      ];
      const born = (m: Member) => Number(m.annotations[keys.createdGeneration]);
      expect(Math.min(...news.map(born))).toBeGreaterThan(Math.max(...olds.map(born)));
      const seconds = new Set(olds.map((m) => m.created));
      ties += news.filter((m) => seconds.has(m.created)).length;
      await kubectl(['scale', 'virtualmachinepool/newest', '--replicas=2']);
      const two = await converged('newest', 2);
      expect(two.map((m) => m.name).sort()).toEqual(first);
    }
    console.log(`[newest] 3 up/down rounds, ${ties} newcomers tied with a survivor's second`);
  });

  it('scales down OldestFirst removing the oldest', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('oldest', (p) => {
        p.spec.replicas = 1;
        p.spec.scaleDownPolicy = 'OldestFirst';
      }),
    );
    const [old] = await converged('oldest', 1);
    // No pause: a newcomer in the same second ties on creationTimestamp and loses on generation.
    await kubectl(['scale', 'virtualmachinepool/oldest', '--replicas=3']);
    await converged('oldest', 3);
    await kubectl(['scale', 'virtualmachinepool/oldest', '--replicas=2']);
    const two = await converged('oldest', 2);
    expect(two.map((m) => m.name)).not.toContain(old?.name);
  });

  it('replaces a VM deleted with kubectl under a fresh name', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('lost', (p) => (p.spec.replicas = 2)),
    );
    const before = await converged('lost', 2);
    const victim = before[0]!.name;
    await kubectl(['delete', 'vm', victim, '--wait=false']);
    const after = await eventually('a replacement', async () => {
      const ms = await members('lost');
      const live = ms.filter((m) => !m.terminating && m.phase === 'Running');
      return live.length === 2 && !ms.some((m) => m.name === victim) ? live : undefined;
    });
    expect(after.map((m) => m.name)).not.toContain(victim);
    expect(after.map((m) => m.name)).toContain(before[1]!.name);
  });

  it('gives up a recorded create whose name a VM outside the pool holds, and creates another', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('taken', (p) => (p.spec.replicas = 0)),
    );
    await converged('taken', 0);
    const outsider = 'taken-zzzzz';
    const template = pool('taken').spec.virtualMachineTemplate;
    await create('virtualmachines', ns, {
      apiVersion: 'virtualization.deckhouse.io/v1alpha2',
      kind: 'VirtualMachine',
      metadata: { name: outsider },
      spec: template.spec,
    });
    // As if an earlier reconcile recorded the name and crashed before its create.
    await kubectl([
      'patch',
      'virtualmachinepool/taken',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { intent: { creates: [outsider] } } }),
    ]);
    await eventually('the recorded create dropped', async () =>
      (await status('taken')).intent === undefined ? true : undefined,
    );
    await kubectl(['scale', 'virtualmachinepool/taken', '--replicas=1']);
    const [member] = await converged('taken', 1);
    expect(member?.name).toMatch(/^taken-/);
    expect(member?.name).not.toBe(outsider);
    const vm = await read('virtualmachines', ns, outsider);
    expect(vm?.metadata.ownerReferences).toBeUndefined();
    expect(vm?.metadata.deletionTimestamp).toBeUndefined();
  });

  it('keeps Stopped members instead of replacing them', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('stopped', (p) => {
        p.spec.replicas = 2;
        p.spec.virtualMachineTemplate.spec.runPolicy = 'AlwaysOff';
      }),
    );
    const ms = await converged('stopped', 2, 'Stopped');
    await new Promise((r) => setTimeout(r, 2500));
    const again = await members('stopped');
    expect(again.map((m) => m.name).sort()).toEqual(ms.map((m) => m.name).sort());
    const st = await status('stopped');
    expect(st.readyReplicas).toBe(0);
    expect(st.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'False',
      message: 'Only 0 of 2 replicas are ready.',
    });
  });

  it('rolls a template edit out in place: restart pending with Manual, applied with Automatic', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('roll', (p) => (p.spec.replicas = 2)),
    );
    const before = await converged('roll', 2);
    await kubectl([
      'patch',
      'virtualmachinepool/roll',
      '--type=merge',
      '-p',
      '{"spec":{"virtualMachineTemplate":{"spec":{"cpu":{"cores":4}}}}}',
    ]);
    const pending = await eventually('restart pending on both', async () => {
      const s = await status('roll');
      return s.restartPendingReplicas === 2 ? s : undefined;
    });
    expect(pending.conditions?.find((c) => c.type === 'Synced')).toMatchObject({
      status: 'False',
      reason: 'RestartPendingApproval',
    });
    const patched = await members('roll');
    expect(patched.map((m) => m.name).sort()).toEqual(before.map((m) => m.name).sort());
    for (const m of patched) expect(m.refs).toEqual(before.find((b) => b.name === m.name)?.refs);
    await kubectl([
      'patch',
      'virtualmachinepool/roll',
      '--type=merge',
      '-p',
      '{"spec":{"virtualMachineTemplate":{"spec":{"disruptions":{"restartApprovalMode":"Automatic"}}}}}',
    ]);
    const done = await eventually(
      'rollout applied',
      async () => {
        const s = await status('roll');
        return s.updatedReplicas === 2 && s.restartPendingReplicas === 0 ? s : undefined;
      },
      60_000,
    );
    expect(done.conditions?.find((c) => c.type === 'Synced')).toMatchObject({ status: 'True' });
  });

  it('reuses a freed Retain disk (same uid) on the next scale-up', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('reuse', (p) => (p.spec.replicas = 2)),
    );
    await converged('reuse', 2);
    await kubectl(['scale', 'virtualmachinepool/reuse', '--replicas=1']);
    const [kept] = await converged('reuse', 1);
    const freed = await eventually('a free-since stamp on the freed cache disk', async () => {
      const ds = await disks('reuse');
      return ds.find(
        (d) => d.template === 'cache' && d.freeSince !== undefined && !kept!.refs.includes(d.name),
      );
    });
    await kubectl(['scale', 'virtualmachinepool/reuse', '--replicas=2']);
    const two = await converged('reuse', 2);
    const newcomer = two.find((m) => m.name !== kept!.name)!;
    expect(newcomer.refs[1]).toBe(freed.name);
    const after = (await disks('reuse')).find((d) => d.name === freed.name);
    expect(after?.uid).toBe(freed.uid);
    expect(after?.freeSince).toBeUndefined();
    expect((await disks('reuse')).filter((d) => d.template === 'cache')).toHaveLength(2);
  });

  it('collects free Retain disks beyond keep once ttl passed (disk-gc-tick)', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('gc', (p) => {
        p.spec.replicas = 3;
        p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep: 1, ttl: '2s' };
      }),
    );
    await converged('gc', 3);
    await kubectl(['scale', 'virtualmachinepool/gc', '--replicas=1']);
    const [kept] = await converged('gc', 1);
    await eventually('two stamped free disks', async () => {
      const free = (await disks('gc')).filter(
        (d) => d.template === 'cache' && d.freeSince !== undefined,
      );
      return free.length === 2 ? free : undefined;
    });
    await new Promise((r) => setTimeout(r, 3500));
    expect(await stack.ping(stack.gcUrl, {})).toBe(202);
    const left = await eventually('one free disk collected', async () => {
      const cache = (await disks('gc')).filter((d) => d.template === 'cache' && !d.terminating);
      return cache.length === 2 ? cache : undefined;
    });
    expect(left.map((d) => d.name)).toContain(kept!.refs[1]);
    const collected = (await eventMessages(ns, 'DiskCollected')).filter((m) =>
      m.includes('free for longer than its template ttl'),
    );
    expect(collected.length).toBeGreaterThanOrEqual(1);
  });

  it('a foreign VM referencing a free Retain disk keeps it from reuse and from GC past ttl', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('foreign', (p) => {
        p.spec.replicas = 2;
        p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep: 0, ttl: '2s' };
      }),
    );
    await converged('foreign', 2);
    await kubectl(['scale', 'virtualmachinepool/foreign', '--replicas=1']);
    const [kept] = await converged('foreign', 1);
    const freed = await eventually('a free-since stamp on the freed cache disk', async () =>
      (await disks('foreign')).find(
        (d) => d.template === 'cache' && d.freeSince !== undefined && !kept!.refs.includes(d.name),
      ),
    );
    // Somebody's own VM (no pool label, no owner) mounts the free disk.
    const body = runnersVm(ns, 'someones-vm');
    body.spec.blockDeviceRefs = [{ kind: 'VirtualDisk', name: freed.name }];
    await create('virtualmachines', ns, body);
    try {
      await eventually(
        'the platform reports it attached and vmpool clears free-since',
        async () => {
          const d = await read('virtualdisks', ns, freed.name);
          const attachedTo = (
            (d?.status ?? {}) as { attachedToVirtualMachines?: { name: string }[] }
          ).attachedToVirtualMachines;
          const stamp = ((d?.metadata.annotations ?? {}) as Record<string, string>)[keys.freeSince];
          return attachedTo?.some((a) => a.name === 'someones-vm') === true && stamp === undefined
            ? true
            : undefined;
        },
      );
      // Past ttl, a GC pass leaves it.
      await new Promise((r) => setTimeout(r, 3000));
      expect(await stack.ping(stack.gcUrl, {})).toBe(202);
      await new Promise((r) => setTimeout(r, 1000));
      expect((await disks('foreign')).find((d) => d.name === freed.name)?.terminating).toBe(false);
      // A scale-up makes a new cache disk rather than take the mounted one.
      await kubectl(['scale', 'virtualmachinepool/foreign', '--replicas=2']);
      const two = await converged('foreign', 2);
      expect(two.flatMap((m) => m.refs)).not.toContain(freed.name);
      const after = (await disks('foreign')).find((d) => d.name === freed.name);
      expect(after).toMatchObject({ uid: freed.uid, terminating: false });
    } finally {
      await kubectl(['delete', 'vm', 'someones-vm', '--wait=false']);
    }
  });

  it('a detached member keeps its disks', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('detach', (p) => {
        p.spec.replicas = 2;
        p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep: 0, ttl: '2s' };
      }),
    );
    const [gone] = await converged('detach', 2);
    const own = gone!.refs.filter((r) => r !== 'tools-iso');
    // The ReplicaSet detach pattern: the pool's labels taken off the VM.
    await kubectl(['label', 'vm', gone!.name, `${keys.poolUid}-`, `${keys.pool}-`]);
    const two = await converged('detach', 2);
    expect(two.map((m) => m.name)).not.toContain(gone!.name);
    // Past ttl, and after a GC pass, the detached VM still has both its disks, neither stamped free.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await stack.ping(stack.gcUrl, {})).toBe(202);
    await new Promise((r) => setTimeout(r, 1000));
    const ds = await disks('detach');
    for (const name of own)
      expect(ds.find((d) => d.name === name)).toMatchObject({
        terminating: false,
        freeSince: undefined,
      });
    expect(two.flatMap((m) => m.refs).filter((r) => own.includes(r))).toEqual([]);
    const vm = await read('virtualmachines', ns, gone!.name);
    expect(vm?.metadata.deletionTimestamp).toBeUndefined();
    await kubectl(['delete', 'vm', gone!.name, '--wait=false']);
  });

  it("a paused pool's expired disks survive disk GC, and go once it is unpaused", async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('pausedgc', (p) => {
        p.spec.replicas = 2;
        p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep: 0, ttl: '2s' };
      }),
    );
    await converged('pausedgc', 2);
    await kubectl(['scale', 'virtualmachinepool/pausedgc', '--replicas=1']);
    const [kept] = await converged('pausedgc', 1);
    const freed = await eventually('a free-since stamp on the freed cache disk', async () =>
      (await disks('pausedgc')).find(
        (d) => d.template === 'cache' && d.freeSince !== undefined && !kept!.refs.includes(d.name),
      ),
    );
    await kubectl([
      'patch',
      'virtualmachinepool/pausedgc',
      '--type=merge',
      '-p',
      '{"spec":{"paused":true}}',
    ]);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await stack.ping(stack.gcUrl, {})).toBe(202);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await disks('pausedgc')).find((d) => d.name === freed.name)?.terminating).toBe(false);
    await kubectl([
      'patch',
      'virtualmachinepool/pausedgc',
      '--type=merge',
      '-p',
      '{"spec":{"paused":false}}',
    ]);
    expect(await stack.ping(stack.gcUrl, {})).toBe(202);
    await eventually('the expired disk collected once unpaused', async () => {
      const d = (await disks('pausedgc')).find((x) => x.name === freed.name);
      return d === undefined || d.terminating ? true : undefined;
    });
  });

  it('a VM with an out-of-range bootOrder stops nothing but its own pool (issue 23)', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('boot', (p) => (p.spec.replicas = 1)),
    );
    await create(
      'virtualmachinepools',
      ns,
      pool('bystander', (p) => {
        p.spec.replicas = 2;
        p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep: 0, ttl: '2s' };
      }),
    );
    await converged('boot', 1);
    await converged('bystander', 2);
    const bootUid = String((await read('virtualmachinepools', ns, 'boot'))?.metadata.uid);
    // Carries boot's pool-uid label; the platform's CRD says only `minimum: 1` of bootOrder, so the
    // API server stores 2^40. vmpool's model once refused it, and the whole list with it.
    const odd = runnersVm(ns, 'boot-odd');
    await create('virtualmachines', ns, {
      ...odd,
      metadata: { ...odd.metadata, labels: { [keys.poolUid]: bootUid, [keys.pool]: 'boot' } },
      spec: {
        ...odd.spec,
        blockDeviceRefs: odd.spec.blockDeviceRefs.map((r, i) => ({ ...r, bootOrder: 2 ** 40 + i })),
      },
    });
    expect(await stack.ping(stack.reconcileUrl, {})).toBe(202);
    await kubectl(['scale', 'virtualmachinepool/bystander', '--replicas=0']);
    await converged('bystander', 0);
    await eventually('bystander: two stamped free cache disks', async () => {
      const free = (await disks('bystander')).filter(
        (d) => d.template === 'cache' && d.freeSince !== undefined,
      );
      return free.length === 2 ? free : undefined;
    });
    await new Promise((r) => setTimeout(r, 2500));
    // The tick that answered 503 for every pool while that VM existed.
    expect(await stack.ping(stack.gcUrl, {})).toBe(202);
    await eventually('the bystander pool collected', async () => {
      const cache = (await disks('bystander')).filter(
        (d) => d.template === 'cache' && !d.terminating,
      );
      return cache.length === 0 ? true : undefined;
    });
    expect(await stack.ping(stack.reconcileUrl, {})).toBe(202);
    const synced = (await status('boot')).conditions?.find((c) => c.type === 'Synced');
    expect(synced).toMatchObject({ status: 'True' });
    // Its own pool goes on too: the one member it had, and the labelled VM left as it was.
    const labelled = (await members('boot')).map((m) => m.name);
    expect(labelled).toHaveLength(2);
    expect(labelled).toContain('boot-odd');
  });

  it('a disk create the API server refuses leaves a FailedCreate Event in its words', async () => {
    // The API server's own admission (a ValidatingAdmissionPolicy, no webhook) refuses every disk
    // create in this namespace.
    const name = `no-disks-${ns}`;
    const policy = [
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: ['virtualization.deckhouse.io'],
                apiVersions: ['*'],
                operations: ['CREATE'],
                resources: ['virtualdisks'],
              },
            ],
          },
          validations: [{ expression: 'false', message: 'no disks in this namespace' }],
        },
      },
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name },
        spec: {
          policyName: name,
          validationActions: ['Deny'],
          matchResources: {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
          },
        },
      },
    ];
    await cluster().applyManifest(policy);
    try {
      await eventually('the policy in force', async () => {
        try {
          await create('virtualdisks', ns, {
            kind: 'VirtualDisk',
            metadata: { name: 'probe' },
            spec: { persistentVolumeClaim: { size: '1Gi' } },
          });
          await kubectl(['delete', 'vd', 'probe', '--wait=false']);
          return undefined;
        } catch {
          return true;
        }
      });
      await create(
        'virtualmachinepools',
        ns,
        pool('refused', (p) => (p.spec.replicas = 1)),
      );
      const failed = await eventually('a FailedCreate Event for a disk', async () => {
        const all = await eventMessages(ns, 'FailedCreate');
        return all.find((m) => m.startsWith('Failed to create VirtualDisk "refused-cache-'));
      });
      expect(failed).toContain('no disks in this namespace');
    } finally {
      await cluster().kubectl([
        'delete',
        'validatingadmissionpolicybinding,validatingadmissionpolicy',
        name,
      ]);
      await kubectl(['delete', 'virtualmachinepool', 'refused', '--wait=false']);
    }
  });

  it(
    'deletes a free disk within 60 s of its ttl when ticked on the schedule knative ships',
    { timeout: 180_000 },
    async () => {
      const periodMs = shippedGcPeriodMs();
      expect(periodMs).toBeLessThanOrEqual(60_000);
      await create(
        'virtualmachinepools',
        ns,
        pool('ontime', (p) => {
          p.spec.replicas = 1;
          p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep: 0, ttl: '10s' };
        }),
      );
      await converged('ontime', 1);
      await kubectl(['scale', 'virtualmachinepool/ontime', '--replicas=0']);
      const free = await eventually('the freed disk stamped', async () =>
        (await disks('ontime')).find((d) => d.template === 'cache' && d.freeSince !== undefined),
      );
      const expiry = Date.parse(free.freeSince!) + 10_000;
      // A PingSource fires at the start of each period of wall-clock time, as cron does. Each tick
      // is judged by itself: the promise is "the first pass that starts after the ttl deletes it",
      // so the lateness is at most one period plus that pass. Judging the poll that notices the
      // deletion against 60 s flat mixed the pass and the poll into the schedule (60.24 s once).
      const ticks: { start: number; end: number; status: number; gone: boolean }[] = [];
      const untilBoundary = (): number => periodMs - (Date.now() % periodMs);
      let stopped = false;
      let ticking: NodeJS.Timeout | undefined;
      const tick = async (): Promise<void> => {
        if (stopped) return;
        // The next period's start: a timer may fire a millisecond before this one's by the wall
        // clock, and would then tick twice at one boundary.
        const untilNext = untilBoundary();
        ticking = setTimeout(
          () => void tick(),
          untilNext < periodMs / 2 ? untilNext + periodMs : untilNext,
        );
        const start = Date.now();
        const status = await stack.ping(stack.gcUrl, {}).catch(() => 0);
        const end = Date.now();
        ticks.push({
          start,
          end,
          status,
          gone: (await read('virtualdisks', ns, free.name)) === undefined,
        });
      };
      ticking = setTimeout(() => void tick(), untilBoundary());
      try {
        await eventually(
          'a tick that collected the free disk',
          () => Promise.resolve(ticks.some((t) => t.gone) ? true : undefined),
          periodMs + 30_000,
        );
      } finally {
        stopped = true;
        clearTimeout(ticking);
      }
      const deleting = ticks.find((t) => t.gone)!;
      console.log(
        `[gc] free disk deleted by the tick that started ${((deleting.start - expiry) / 1000).toFixed(1)} s after its ttl expired; its pass took ${deleting.end - deleting.start} ms; ticks (start after the expiry, ms; gone after it): ${ticks.map((t) => `${String(t.start - expiry)} ${String(t.gone)}`).join(', ')}`,
      );
      expect(ticks.map((t) => t.status)).toEqual(ticks.map(() => 202));
      // Never before its ttl: the pass reads its clock between the tick's start and its answer.
      expect(deleting.end).toBeGreaterThanOrEqual(expiry);
      // No tick that started after the expiry left it in place (that would be a missed pass). A
      // disk goes once its age exceeds the ttl, so a pass whose clock reads the expiry's very
      // millisecond keeps it: strictly after, hence `>`.
      expect(ticks.slice(0, ticks.indexOf(deleting)).filter((t) => t.start > expiry)).toEqual([]);
      // ...and the one that deleted it started within one shipped period of the expiry.
      expect(deleting.start - expiry).toBeLessThanOrEqual(periodMs);
    },
  );

  it('grows disks when the template size grows, never shrinks them', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('grow', (p) => (p.spec.replicas = 1)),
    );
    await converged('grow', 1);
    await kubectl([
      'patch',
      'virtualmachinepool/grow',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/virtualDiskTemplates/1/spec/persistentVolumeClaim/size","value":"2Gi"}]',
    ]);
    const grown = await eventually('the cache disk at 2Gi', async () => {
      const d = (await disks('grow')).find((x) => x.template === 'cache');
      return d?.size === '2Gi' ? d : undefined;
    });
    expect(await eventMessages(ns, 'DiskSizeGrown')).toContain(
      `Grew VirtualDisk "${grown.name}" to 2Gi, the size of its template.`,
    );
    await kubectl([
      'patch',
      'virtualmachinepool/grow',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/virtualDiskTemplates/1/spec/persistentVolumeClaim/size","value":"1Gi"}]',
    ]);
    await new Promise((r) => setTimeout(r, 2500));
    expect((await disks('grow')).find((x) => x.template === 'cache')?.size).toBe('2Gi');
  });

  it('removing a disk template detaches and deletes its disks', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('prune', (p) => (p.spec.replicas = 1)),
    );
    const [m] = await converged('prune', 1);
    const cache = m!.refs[1]!;
    await kubectl([
      'patch',
      'virtualmachinepool/prune',
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'remove', path: '/spec/virtualDiskTemplates/1' },
        { op: 'remove', path: '/spec/virtualMachineTemplate/spec/blockDeviceRefs/1' },
      ]),
    ]);
    await eventually('the cache disk detached and deleted', async () => {
      const ms = await members('prune');
      const ds = await disks('prune');
      const detached = ms.length === 1 && !ms[0]!.refs.includes(cache);
      const gone = !ds.some((d) => d.name === cache && !d.terminating);
      return detached && gone ? true : undefined;
    });
  });

  it('deleting the pool cascades its VMs and pool disks through the garbage collector', async () => {
    await create(
      'virtualmachinepools',
      ns,
      pool('cascade', (p) => (p.spec.replicas = 2)),
    );
    await converged('cascade', 2);
    await kubectl(['delete', 'virtualmachinepool/cascade', '--wait=false']);
    await eventually(
      'VMs and disks gone',
      async () => {
        const ms = await members('cascade');
        const ds = await disks('cascade');
        return ms.length === 0 && ds.length === 0 ? true : undefined;
      },
      90_000,
    );
  });

  it('left no reconcile request failing', () => {
    expect(stack.errors.filter((e) => !e.includes('503'))).toEqual([]);
  });
});

/** The period of the disk-GC PingSource in knative/base: every minute, or every N minutes. */
function shippedGcPeriodMs(): number {
  const text = readFileSync(join(REPO_ROOT, 'knative', 'base', 'eventing.yaml'), 'utf8');
  const gc = parseManifests(text).find(
    (o) => o.kind === 'PingSource' && o.metadata.name === 'vmpool-disk-gc',
  );
  const schedule = (gc?.spec as { schedule?: string } | undefined)?.schedule ?? '';
  const minutes = /^(\*|\*\/(\d+)) \* \* \* \*$/.exec(schedule);
  if (minutes === null) throw new Error(`unexpected disk-GC schedule "${schedule}"`);
  return Number(minutes[2] ?? 1) * 60_000;
}
