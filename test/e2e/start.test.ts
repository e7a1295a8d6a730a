/**
 * `npm start` on its own embedded plane, as a user types it: the closing hints name only what this
 * run started, its functions act as identities of their own (a target written by hand into a pool's
 * scaledownwith annotation is refused, scaledownwith itself records one), and Ctrl-C stops
 * everything within 3 s (npm's own exit included) and leaves no process of the run behind.
 */
import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import { runKubectl } from '../../local/controlplane/kubectl.js';
import type { NpmStart } from './npm-start.js';
import { noLeftovers, npmStart, stoppedCleanly } from './npm-start.js';

let running: NpmStart | undefined;
afterEach(async () => {
  await running?.stop().catch(() => undefined);
  running = undefined;
});

/** The embedded plane's directory, from the `export KUBECONFIG=…` hint. */
async function planeDir(run: NpmStart): Promise<string> {
  const line = await run.waitFor(/export KUBECONFIG=/);
  return dirname(line.replace(/.*export KUBECONFIG=/, '').trim());
}

/** kubectl as the hints print it (the plane's own binary, the run's kubeconfig). */
async function hintedKubectl(
  run: NpmStart,
): Promise<(args: string[], input?: string) => Promise<string>> {
  const kubeconfig = (await run.waitFor(/export KUBECONFIG=/))
    .replace(/.*export KUBECONFIG=/, '')
    .trim();
  const bin = (await run.waitFor(/ get vmpool,vm,vd /)).trim().split(/\s+/)[0] ?? 'kubectl';
  return (args, input) => runKubectl(bin, kubeconfig, args, input);
}

/** Ctrl-C; the time until npm itself has exited. */
async function ctrlC(run: NpmStart): Promise<number> {
  const t0 = performance.now();
  const ended = await run.stop();
  const ms = Math.round(performance.now() - t0);
  expect(stoppedCleanly(run, ended)).toBe(true);
  return ms;
}

describe('npm start on the embedded plane', () => {
  it('with --no-sample: hints without the sample; Ctrl-C within 3 s, nothing left', async () => {
    const run = (running = npmStart(['--no-sample']));
    await run.waitFor(/vmpool is running/, 240_000);
    const dir = await planeDir(run);
    const text = run.lines.join('\n');
    expect(text).not.toContain('runners');
    expect(text).not.toContain('vmpool-demo');
    expect(text).toContain('get vmpool,vm,vd -A');
    const ms = await ctrlC(run);
    running = undefined;
    console.error(`[start] Ctrl-C to npm's exit: ${String(ms)} ms`);
    expect(ms).toBeLessThanOrEqual(3000);
    expect(await noLeftovers(dir, 5000)).toEqual([]);
  }, 300_000);

  it('by default: the sample pool ready, hints about it (and the plugin when built); a forged scaledownwith target refused, a real one recorded; Ctrl-C within 3 s', async () => {
    const run = (running = npmStart([]));
    await run.waitFor(/sample pool ready: 3\/3 replicas Running/, 240_000);
    await run.waitFor(/vmpool is running/);
    const dir = await planeDir(run);
    const text = run.lines.join('\n');
    expect(text).toContain('scale virtualmachinepool/runners -n vmpool-demo --replicas=5');
    expect(text).toMatch(
      /vmpool status runners -n vmpool-demo|npm run build also makes the kubectl plugin/,
    );

    // A forged Explicit target is refused: the user's kubectl is not scale-down-with.
    const kubectl = await hintedKubectl(run);
    const vms = JSON.parse(await kubectl(['get', 'vm', '-n', 'vmpool-demo', '-o', 'json'])) as {
      items: Array<{ metadata: { name: string; uid: string } }>;
    };
    const target = vms.items[0]?.metadata;
    if (target === undefined) throw new Error('the sample pool has no VMs');
    const named = JSON.stringify([{ name: target.name, uid: target.uid }]);
    const forged = await kubectl([
      'patch',
      'virtualmachinepool/runners',
      '-n',
      'vmpool-demo',
      '--type=merge',
      '-p',
      JSON.stringify({ metadata: { annotations: { [keys.scaleDownTargets]: named } } }),
    ]).then(
      () => 'admitted',
      (err: unknown) => String(err),
    );
    expect(forged).toContain(
      'targets may be added only by system:serviceaccount:vmpool-local:scale-down-with, not by',
    );
    // scaledownwith, acting as scale-down-with, records the same target and lowers the pool.
    const path = /create --raw (\S+scaledownwith)/.exec(text)?.[1];
    expect(path).toBeDefined();
    const answer = await kubectl(
      ['create', '--raw', path ?? '', '-f', '-'],
      JSON.stringify({ targets: [target.name] }),
    );
    expect(answer).toContain('removed');
    const replicas = await kubectl([
      'get',
      'virtualmachinepool/runners',
      '-n',
      'vmpool-demo',
      '-o',
      'jsonpath={.spec.replicas}',
    ]);
    expect(replicas.trim()).toBe('2');

    const ms = await ctrlC(run);
    running = undefined;
    console.error(`[start] Ctrl-C to npm's exit (sample pool running): ${String(ms)} ms`);
    expect(ms).toBeLessThanOrEqual(3000);
    expect(await noLeftovers(dir, 5000)).toEqual([]);
  }, 300_000);
});
