/**
 * `kubectl vmpool`, as a user runs it: the plugin bundled as `npm run build` makes it, on PATH as
 * `kubectl-vmpool`, found and run by the real kubectl against the real plane, with the aggregated
 * API (scaledownwith, victims) served through kube-apiserver.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import { smallPool } from '../../local/guide.js';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { BANNER } from '../../scripts/build.js';
import { PLUGIN, buildPlugin } from '../../scripts/build-plugin.js';
import { startApiserverFacing, type ApiserverFacing } from './apiserver-facing.js';
import { cluster, create, dropNamespace, eventually, newNamespace } from './harness.js';
import { members } from './members.js';
import { startStack, type Stack } from './stack.js';

let ns = '';
let stack: Stack;
let facing: ApiserverFacing;
let bin = '';

beforeAll(async () => {
  ns = await newNamespace('plugin');
  stack = await startStack(ns);
  facing = await startApiserverFacing(ns);
  // As `npm run build` makes it: dist/bin/kubectl-vmpool, the name kubectl looks for.
  const dist = mkdtempSync(join(tmpdir(), 'vmpool-plugin-'));
  await buildPlugin(REPO_ROOT, dist, BANNER);
  bin = join(dist, 'bin');
}, 120_000);
afterAll(async () => {
  await facing.stop();
  await stack.stop();
  await dropNamespace(ns);
  rmSync(join(bin, '..'), { recursive: true, force: true });
});

/** kubectl with the plugin on PATH: exit code, stdout and stderr. */
function kubectlWithPlugin(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const { binDir, kubeconfigPath } = cluster().info;
  return new Promise((ok) => {
    execFile(
      join(binDir, 'kubectl'),
      [...args, '--kubeconfig', kubeconfigPath],
      { env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` } },
      (err, out, errOut) => {
        if (process.env.VMPOOL_E2E_TRANSCRIPT)
          console.log(`$ kubectl ${args.join(' ')}\n${out}${errOut}`);
        ok({ code: err === null ? 0 : Number(err.code ?? 1), out, err: errOut });
      },
    );
  });
}

/** `kubectl vmpool …`. */
const vmpool = (args: string[]) => kubectlWithPlugin(['vmpool', ...args]);

async function settled(n: number): Promise<string[]> {
  return eventually(`${String(n)} Running members`, async () => {
    const all = await members(ns, 'runners');
    return all.length === n && all.every((m) => !m.terminating && m.phase === 'Running')
      ? all.map((m) => m.name).sort()
      : undefined;
  });
}

describe('kubectl vmpool', () => {
  it('is found by kubectl and says its version', async () => {
    const r = await vmpool(['version']);
    expect(r).toMatchObject({ code: 0 });
    expect(r.out).toMatch(/^kubectl-vmpool \d+\.\d+\.\d+/);
    const list = await kubectlWithPlugin(['plugin', 'list']);
    expect(list.out).toContain(join(bin, PLUGIN));
  });

  it('status: counts, conditions, one line per member with its disks, then the Events', async () => {
    await create('virtualmachinepools', ns, smallPool(ns, 'runners'));
    const names = await settled(3);
    const r = await vmpool(['status', 'runners', '-n', ns]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`VirtualMachinePool ${ns}/runners (NewestFirst)`);
    expect(r.out).toContain('Replicas:  3 desired, 3 current, 3 ready');
    expect(r.out).toContain('Available=True AllReplicasReady');
    for (const name of names)
      expect(r.out).toMatch(new RegExp(`${name}\\s+Running\\s+yes\\s+no\\s+${name}-root,`));
    expect(r.out).toMatch(/Normal\s+SuccessfulCreate\s+Created VirtualMachine/);
    const json = await vmpool(['status', 'runners', '-n', ns, '-o', 'json']);
    const parsed = JSON.parse(json.out) as {
      members: unknown[];
      pool: { metadata: { name: string } };
    };
    expect(parsed.pool.metadata.name).toBe('runners');
    expect(parsed.members).toHaveLength(3);
    const yaml = await vmpool(['status', 'runners', '-n', ns, '-o', 'yaml']);
    expect(yaml.out).toContain('members:');
  });

  it('victims: the next ones a scale-down would remove, as the preview ranks them', async () => {
    const all = await settled(3);
    const cheap = all[1] ?? '';
    await cluster().kubectl(['annotate', 'vm', cheap, '-n', ns, `${keys.deletionCost}=-100`]);
    const r = await vmpool(['victims', 'runners', '-n', ns, '--count', '2']);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines[0]).toMatch(/^#\s+NAME\s+REASON\s+COST/);
    expect(lines[1]).toMatch(new RegExp(`^1\\s+${cheap}\\s+DeletionCost\\s+-100`));
    expect(lines).toHaveLength(3);
  });

  it('scale-down-with: a dry run changes nothing; then the named VM goes and the pool shrinks', async () => {
    const [first] = await settled(3);
    const dry = await vmpool(['scale-down-with', 'runners', first ?? '', '-n', ns, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.out).toContain(`virtualmachine/${first ?? ''} removed (dry run)`);
    expect(dry.out).toContain('dry run: nothing changed');
    expect(await settled(3)).toContain(first);
    const r = await vmpool(['scale-down-with', 'runners', first ?? '', '-n', ns]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`virtualmachine/${first ?? ''} removed`);
    expect(r.out).toContain('replicas 3 -> 2');
    expect(await settled(2)).not.toContain(first);
  });

  it('errors in the API server’s words on stderr, with a non-zero exit', async () => {
    const missing = await vmpool(['status', 'nope', '-n', ns]);
    expect(missing.code).not.toBe(0);
    expect(missing.err).toContain('Error from server (NotFound): ');
    expect(missing.err).toContain('"nope" not found');
    const stranger = await vmpool(['scale-down-with', 'runners', 'not-a-member', '-n', ns]);
    expect(stranger.code).not.toBe(0);
    expect(stranger.err).toMatch(/^Error from server \(BadRequest\): .*not-a-member/);
    const usage = await vmpool(['victims']);
    expect(usage.code).not.toBe(0);
    expect(usage.err).toContain('victims needs a pool name');
    const context = await vmpool(['status', 'runners', '--context', 'nowhere']);
    expect(context.err).toContain('context "nowhere" does not exist');
  });
});
