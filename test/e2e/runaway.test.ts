/**
 * Issue-23 promises through the user's own path: `npm start` on its embedded plane and kubectl as a
 * user types it. A mistaken scale is refused or taken back before it costs the cluster, and a
 * runner that protects itself while a scale-down is under way is never deleted.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, keys } from '../../shared/api/index.js';
import { CREATE_BURST, DEFAULT_MAX_REPLICAS } from '../../shared/domain/index.js';
import { runKubectlFull } from '../../local/controlplane/kubectl.js';
import { runnersPool } from '../../local/guide.js';
import type { NpmStart } from './npm-start.js';
import { hintedKubectlBin, npmStart, stoppedCleanly } from './npm-start.js';

const NS = 'runaway';
let run: NpmStart | undefined;
let kubectlBin = '';
let kubeconfig = '';

/** kubectl as the user types it; stdout and stderr (warnings) of a success, or the refusal. */
async function kubectl(args: string[], input?: string): Promise<{ out: string; err: string }> {
  const r = await runKubectlFull(kubectlBin, kubeconfig, args, input);
  return { out: r.stdout, err: r.stderr };
}

async function refusal(args: string[]): Promise<string> {
  try {
    await kubectl(args);
  } catch (err) {
    return String(err);
  }
  throw new Error(`kubectl ${args.join(' ')} was not refused`);
}

interface Vm {
  metadata: { name: string; resourceVersion: string; deletionTimestamp?: string };
}

async function vms(pool: string): Promise<Vm[]> {
  const { out } = await kubectl([
    'get',
    'vm',
    '-n',
    NS,
    '-l',
    `${keys.pool}=${pool}`,
    '-o',
    'json',
  ]);
  return (JSON.parse(out) as { items: Vm[] }).items;
}

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** A light pool (one small Delete disk a VM): what is measured here is the count of VMs. */
function diskless(name: string, replicas: number) {
  const p = runnersPool(NS, name);
  p.spec.replicas = replicas;
  p.spec.virtualMachineTemplate.spec.blockDeviceRefs = [{ kind: 'VirtualDisk', name: 'root' }];
  p.spec.virtualDiskTemplates = p.spec.virtualDiskTemplates.slice(0, 1);
  p.spec.virtualDiskTemplates[0]!.spec.persistentVolumeClaim.size = '1Gi';
  return { apiVersion: API_VERSION, ...p };
}

beforeAll(async () => {
  run = npmStart(['--no-sample']);
  await run.waitFor(/vmpool is running/, 240_000);
  const hint = await run.waitFor(/export KUBECONFIG=/);
  kubeconfig = hint.replace(/.*export KUBECONFIG=/, '').trim();
  kubectlBin = await hintedKubectlBin(run);
  await kubectl(['create', 'namespace', NS]);
}, 300_000);

afterAll(async () => {
  if (run === undefined) return;
  const ended = await run.stop();
  expect(stoppedCleanly(run, ended)).toBe(true);
});

describe('a mistaken scale through npm start and kubectl', () => {
  it('100000 is refused naming the maximum; the largest allowed, taken back to 1 at once, stops within one burst and converges', async () => {
    await kubectl(['apply', '-f', '-'], JSON.stringify(diskless('other', 1)));
    await until('the pool at 1 replica', 60_000, async () =>
      (await vms('other')).length === 1 ? true : undefined,
    );
    const refused = await refusal(['scale', '-n', NS, 'vmpool/other', '--replicas=100000']);
    expect(refused).toContain('100000 is above');
    expect(refused).toContain(`${DEFAULT_MAX_REPLICAS} replicas`);

    const big = await kubectl([
      'scale',
      '-n',
      NS,
      'vmpool/other',
      `--replicas=${DEFAULT_MAX_REPLICAS}`,
    ]);
    expect(big.err).toContain('more than tenfold');
    const t0 = performance.now();
    await sleep(2000);
    await kubectl(['scale', '-n', NS, 'vmpool/other', '--replicas=1']);
    const backAt = performance.now() - t0;
    // Creation stops within the burst under way: the count of VMs ever seen stays within one burst.
    let peak = 0;
    let stoppedAt = 0;
    let last = -1;
    const settled = await until('the pool back at 1 replica', 180_000, async () => {
      const now = await vms('other');
      peak = Math.max(peak, now.length);
      if (now.length !== last) stoppedAt = performance.now() - t0;
      last = now.length;
      const live = now.filter((v) => v.metadata.deletionTimestamp === undefined);
      return now.length === 1 && live.length === 1 ? now : undefined;
    });
    const { out } = await kubectl(['get', 'vmpool', '-n', NS, 'other', '-o', 'json']);
    const status = (JSON.parse(out) as { status?: { intent?: { creates?: string[] } } }).status;
    console.error(
      `[runaway] scaled back after ${Math.round(backAt)} ms; peak ${peak} VMs (burst ${CREATE_BURST}); last change of the count at ${Math.round(stoppedAt)} ms`,
    );
    expect(peak).toBeLessThanOrEqual(1 + 2 * CREATE_BURST);
    expect(settled).toHaveLength(1);
    expect(status?.intent?.creates ?? []).toEqual([]);
  }, 300_000);

  it('a runner protecting itself while a scale-down of 60 runs is never deleted', async () => {
    await kubectl(['apply', '-f', '-'], JSON.stringify(diskless('racing', 60)));
    await until('60 members', 180_000, async () =>
      (await vms('racing')).length === 60 ? true : undefined,
    );
    const before = await vms('racing');
    const order = before.map((v) => v.metadata.name).sort(() => Math.random() - 0.5);
    await kubectl(['scale', '-n', NS, 'vmpool/racing', '--replicas=0']);
    // Runners taking jobs: each protects itself as soon as it can, racing the deletes.
    const protectedOk: string[] = [];
    await Promise.all(
      order.slice(0, 30).map(async (name, i) => {
        await sleep(i * 20);
        try {
          const { out } = await kubectl([
            'annotate',
            '-n',
            NS,
            `vm/${name}`,
            `${keys.protected}=true`,
            '-o',
            'json',
          ]);
          const vm = JSON.parse(out) as Vm;
          if (vm.metadata.deletionTimestamp === undefined) protectedOk.push(name);
        } catch {
          // Deleted before the runner could protect itself: the scale-down won, as it may.
        }
      }),
    );
    await until('the scale-down to settle', 180_000, async () => {
      const now = await vms('racing');
      const live = now.filter((v) => v.metadata.deletionTimestamp === undefined);
      return now.length === live.length && live.length === protectedOk.length ? now : undefined;
    });
    const left = new Set((await vms('racing')).map((v) => v.metadata.name));
    console.error(
      `[runaway] protection race: ${protectedOk.length} of 30 runners protected themselves in time, ${left.size} members left`,
    );
    expect(protectedOk.length).toBeGreaterThan(0);
    for (const name of protectedOk) expect(left.has(name)).toBe(true);
  }, 300_000);
});
