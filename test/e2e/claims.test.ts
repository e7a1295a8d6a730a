/**
 * Claims through the user's own path: `npm start` on its embedded plane (the platform simulated),
 * kubectl as a user types it and `kubectl vmpool` found by kubectl on PATH. A pool with minIdle 2
 * binds three claims to three distinct members (two at once, the third once the pool grew), keeps
 * two idle after every step, deletes a Delete claim's member and recycles a Recycle claim's, lets
 * a ttl expire, releases a claim owned by a Pod when the garbage collector deletes it with the Pod,
 * keeps every claimed member through a scale-down to 0, and refuses scaledownwith of a claimed
 * member with 409.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, CLAIM_API_VERSION, keys } from '../../shared/api/index.js';
import { runnersPool } from '../../local/guide.js';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { BANNER } from '../../scripts/build.js';
import { buildPlugin } from '../../scripts/build-plugin.js';
import type { NpmStart } from './npm-start.js';
import { hintedKubectlBin, noLeftovers, npmStart, stoppedCleanly, until } from './npm-start.js';

const NS = 'claims';
const POOL = 'runners';
let run: NpmStart | undefined;
let kubectlBin = '';
let kubeconfig = '';
let pluginDir = '';

interface Ran {
  code: number;
  out: string;
  err: string;
}

/** kubectl as the user types it, with the plugin on PATH. */
function sh(args: string[], input?: string): Promise<Ran> {
  return new Promise((ok) => {
    const child = execFile(
      kubectlBin,
      [...args, '--kubeconfig', kubeconfig],
      { env: { ...process.env, PATH: `${pluginDir}:${process.env.PATH ?? ''}` } },
      (err, out, errOut) => {
        ok({ code: err === null ? 0 : Number(err.code ?? 1), out, err: errOut });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** A kubectl command that must succeed: its stdout. */
async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await sh(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.err}`);
  return r.out;
}

interface Vm {
  metadata: {
    name: string;
    uid: string;
    creationTimestamp: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  status?: { phase?: string };
}

interface Claim {
  metadata: { name: string; uid: string; creationTimestamp: string };
  spec: { poolName: string; holder?: string };
  status?: {
    phase?: string;
    virtualMachineName?: string;
    conditions?: Array<{ type: string; reason?: string }>;
  };
}

interface PoolStatus {
  replicas?: number;
  idleReplicas?: number;
  claimedReplicas?: number;
}

const json = async <T>(args: string[]): Promise<T> =>
  JSON.parse(await kubectl([...args, '-n', NS, '-o', 'json'])) as T;

const vms = async (): Promise<Vm[]> =>
  (await json<{ items: Vm[] }>(['get', 'vm', '-l', `${keys.pool}=${POOL}`])).items;
const live = async (): Promise<Vm[]> =>
  (await vms()).filter((v) => v.metadata.deletionTimestamp === undefined);
const poolStatus = async (): Promise<PoolStatus> =>
  (await json<{ status?: PoolStatus }>(['get', 'vmpool', POOL])).status ?? {};
const readClaim = async (name: string): Promise<Claim | undefined> => {
  const r = await sh(['get', 'vmclaim', name, '-n', NS, '-o', 'json']);
  if (r.code !== 0 && r.err.includes('NotFound')) return undefined;
  if (r.code !== 0) throw new Error(r.err);
  return JSON.parse(r.out) as Claim;
};

/** Idle members seen after each step (the minimum the pool fell to is printed at the end). */
const idleSeen: Array<[string, number]> = [];

/** Waits until the pool has 2 idle members again and every live member is claimed or idle. */
async function twoIdle(step: string): Promise<PoolStatus> {
  const s = await until(`2 idle members after ${step}`, 120_000, async () => {
    const st = await poolStatus();
    const n = (await live()).length;
    return st.idleReplicas === 2 && n === (st.claimedReplicas ?? 0) + 2 ? st : undefined;
  });
  idleSeen.push([step, s.idleReplicas ?? 0]);
  return s;
}

/** `kubectl vmpool claim … --wait`: the member's name. */
async function claimWait(extra: string[] = []): Promise<{ vm: string; claim: string }> {
  const r = await sh(['vmpool', 'claim', POOL, '-n', NS, '--wait', '--timeout', '3m', ...extra]);
  if (r.code !== 0) throw new Error(`kubectl vmpool claim: ${r.err}`);
  const claim = /virtualmachineclaim\.[^/]+\/(\S+) created/.exec(r.err)?.[1] ?? '';
  return { vm: r.out.trim(), claim };
}

beforeAll(async () => {
  run = npmStart(['--no-sample', '--boot-seconds', '1']);
  await run.waitFor(/vmpool is running/, 240_000);
  const hint = await run.waitFor(/export KUBECONFIG=/);
  kubeconfig = hint.replace(/.*export KUBECONFIG=/, '').trim();
  kubectlBin = await hintedKubectlBin(run);
  const dist = mkdtempSync(join(tmpdir(), 'vmpool-claims-plugin-'));
  await buildPlugin(REPO_ROOT, dist, BANNER);
  pluginDir = join(dist, 'bin');
  await kubectl(['create', 'namespace', NS]);
}, 300_000);

afterAll(async () => {
  if (pluginDir !== '') rmSync(dirname(pluginDir), { recursive: true, force: true });
  if (run === undefined) return;
  const ended = await run.stop();
  if (!stoppedCleanly(run, ended))
    console.error(`[claims] npm start ended ${String(ended)}:\n${run.lines.slice(-15).join('\n')}`);
  console.error(`[claims] idle members after each step: ${JSON.stringify(idleSeen)}`);
  expect(await noLeftovers(dirname(kubeconfig), 10_000)).toEqual([]);
});

describe('claims through npm start, kubectl and kubectl vmpool', () => {
  it("docs/claims.md's manifests (the CI Job with its claim's RBAC, the VDI claim) pass a server-side dry run", async () => {
    const text = readFileSync(join(REPO_ROOT, 'docs', 'claims.md'), 'utf8');
    const blocks = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    for (const ns of ['ci', 'vdi']) await kubectl(['create', 'namespace', ns]);
    for (const b of blocks) await kubectl(['apply', '--dry-run=server', '-f', '-'], b);
  });

  it('kubectl explain virtualmachineclaim.spec describes every field', async () => {
    const out = await kubectl(['explain', 'virtualmachineclaim.spec']);
    for (const field of ['poolName', 'holder', 'ttl', 'onRelease'])
      expect(out).toMatch(new RegExp(`^ {2}${field}\\s.*\\n\\s+\\S`, 'm'));
    expect(out).toContain('Immutable');
    expect(out).toContain('Go duration');
  });

  const bound = new Map<string, string>(); // claim → VM

  it('three claims bind three distinct members: two idle at once, the third once the pool grew', async () => {
    const pool = runnersPool(NS, POOL);
    pool.spec.replicas = 0;
    pool.spec.virtualMachineTemplate.spec.blockDeviceRefs = [{ kind: 'VirtualDisk', name: 'root' }];
    pool.spec.virtualDiskTemplates = pool.spec.virtualDiskTemplates.slice(0, 1);
    pool.spec.virtualDiskTemplates[0]!.spec.persistentVolumeClaim.size = '1Gi';
    const claims = { minIdle: 2, maxReplicas: 8, onRelease: 'Delete' };
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: API_VERSION, ...pool, spec: { ...pool.spec, claims } }),
    );
    await twoIdle('the pool came up');
    const idleBefore = (await live()).map((v) => v.metadata.name).sort();
    expect(idleBefore).toHaveLength(2);

    const got = await Promise.all(
      ['job-1', 'job-2', 'job-3'].map((h) => claimWait(['--holder', h])),
    );
    for (const g of got) bound.set(g.claim, g.vm);
    const names = got.map((g) => g.vm);
    expect(new Set(names).size).toBe(3);
    // The two idle members were taken; the third member was created for the third claim.
    expect(names.filter((n) => idleBefore.includes(n))).toHaveLength(2);
    const now = await vms();
    for (const g of got) {
      const vm = now.find((v) => v.metadata.name === g.vm);
      expect(vm?.metadata.annotations?.[keys.claimedBy]).toBe(g.claim);
      expect(vm?.metadata.labels?.[keys.claimed]).toBe('true');
    }
    const st = await twoIdle('three claims bound');
    expect(st.claimedReplicas).toBe(3);

    // kubectl vmpool status: the counts, each claimed member with its claim and holder, the idle.
    const status = await kubectl(['vmpool', 'status', POOL, '-n', NS]);
    expect(status).toContain(
      'Claims:    3 claimed, 2 idle (minIdle 2, maxReplicas 8, onRelease Delete)',
    );
    for (const [i, g] of got.entries())
      expect(status).toMatch(
        new RegExp(`^${g.vm}\\s.*claimed by ${g.claim} \\(job-${String(i + 1)}\\)$`, 'm'),
      );
    expect(status.split('\n').filter((l) => /^runners-\S+\s.*\sidle$/.test(l))).toHaveLength(2);
    for (const g of got)
      expect(status).toMatch(new RegExp(`^${g.claim}\\s+Bound\\s+${g.vm}\\s`, 'm'));
  }, 300_000);

  it('scaledownwith naming a claimed member answers 409 naming the claim', async () => {
    const [claim, vm] = [...bound.entries()][0]!;
    const r = await sh(['vmpool', 'scale-down-with', POOL, vm, '-n', NS]);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('Error from server (Conflict)');
    expect(r.err).toContain(claim);
    expect((await live()).map((v) => v.metadata.name)).toContain(vm);
  });

  it('releasing a Delete claim deletes its member and the pool refills its idle members', async () => {
    const [claim, vm] = [...bound.entries()][0]!;
    const r = await sh(['vmpool', 'release', claim, '-n', NS]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`deletes virtualmachine/${vm}`);
    await until(`${vm} deleted`, 60_000, async () =>
      (await live()).some((v) => v.metadata.name === vm) ? undefined : true,
    );
    bound.delete(claim);
    const st = await twoIdle('a Delete release');
    expect(st.claimedReplicas).toBe(2);
  }, 180_000);

  it('releasing a Recycle claim returns its member to the idle members', async () => {
    const { claim, vm } = await claimWait(['--on-release', 'Recycle', '--holder', 'recycler']);
    await twoIdle('a Recycle claim bound');
    const r = await sh(['vmpool', 'release', claim, '-n', NS]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`takes virtualmachine/${vm} back as an idle member`);
    const member = await until(`${vm} without claim marks`, 60_000, async () => {
      const v = (await vms()).find((x) => x.metadata.name === vm);
      return v !== undefined && v.metadata.annotations?.[keys.claimedBy] === undefined
        ? v
        : undefined;
    });
    expect(member.metadata.deletionTimestamp).toBeUndefined();
    expect(member.metadata.labels?.[keys.claimed]).toBeUndefined();
    // One idle member too many now: the newest leaves (NewestFirst), the recycled one stays.
    await twoIdle('a Recycle release');
    expect((await live()).map((v) => v.metadata.name)).toContain(vm);
  }, 180_000);

  it('a ttl expires: phase Expired, the member released, the claim kept', async () => {
    const { claim, vm } = await claimWait(['--ttl', '3s', '--holder', 'short']);
    const expired = await until(`${claim} Expired`, 60_000, async () => {
      const c = await readClaim(claim);
      return c?.status?.phase === 'Expired' ? c : undefined;
    });
    expect(expired.status?.conditions?.find((c) => c.type === 'Bound')?.reason).toBe('Expired');
    await until(`${vm} released (deleted)`, 60_000, async () =>
      (await live()).some((v) => v.metadata.name === vm) ? undefined : true,
    );
    await twoIdle('a ttl expired');
    expect(await readClaim(claim)).toBeDefined();
  }, 180_000);

  it('a claim owned by a Pod is released when the Pod is deleted (the garbage collector)', async () => {
    // No kubelet runs: the Pod object is all the garbage collector needs.
    await kubectl(
      ['apply', '-n', NS, '-f', '-'],
      'apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default}\n',
    );
    const created = JSON.parse(
      await kubectl(
        ['create', '-n', NS, '-o', 'json', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'build-42' },
          spec: { containers: [{ name: 'build', image: 'registry.example.com/ci:1' }] },
        }),
      ),
    ) as { metadata: { name: string; uid: string } };
    await kubectl(
      ['create', '-n', NS, '-f', '-'],
      JSON.stringify({
        apiVersion: CLAIM_API_VERSION,
        kind: 'VirtualMachineClaim',
        metadata: {
          name: 'build-42',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Pod', name: 'build-42', uid: created.metadata.uid },
          ],
        },
        spec: { poolName: POOL, holder: 'pod/build-42' },
      }),
    );
    const vm = await until('build-42 Bound', 120_000, async () => {
      const c = await readClaim('build-42');
      return c?.status?.phase === 'Bound' ? c.status.virtualMachineName : undefined;
    });
    await twoIdle('a Pod-owned claim bound');
    await kubectl(['delete', 'pod', 'build-42', '-n', NS, '--wait=false']);
    await until('the garbage collector to delete the claim', 120_000, async () =>
      (await readClaim('build-42')) === undefined ? true : undefined,
    );
    await until(`${vm} released (deleted)`, 60_000, async () =>
      (await live()).some((v) => v.metadata.name === vm) ? undefined : true,
    );
    await twoIdle('the Pod deleted');
  }, 300_000);

  it('a scale-down to 0 keeps every claimed member', async () => {
    const claimed = [...bound.values()].sort();
    expect(claimed).toHaveLength(2);
    await kubectl(['scale', 'vmpool', POOL, '-n', NS, '--replicas=6']);
    await until('6 live members', 120_000, async () =>
      (await live()).length === 6 ? true : undefined,
    );
    await kubectl([
      'patch',
      'vmpool',
      POOL,
      '-n',
      NS,
      '--type=merge',
      '-p',
      '{"spec":{"replicas":0,"claims":{"minIdle":0}}}',
    ]);
    const left = await until('only the claimed members left', 120_000, async () => {
      const all = await vms();
      // A claimed member never even starts to leave.
      for (const name of claimed) {
        const v = all.find((x) => x.metadata.name === name);
        expect(v?.metadata.deletionTimestamp, name).toBeUndefined();
      }
      return all.length === 2 ? all.map((v) => v.metadata.name).sort() : undefined;
    });
    expect(left).toEqual(claimed);
    expect((await poolStatus()).claimedReplicas).toBe(2);
  }, 300_000);
});
