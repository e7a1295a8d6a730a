/**
 * `npm start` on its own embedded plane, as a user types it: the closing hints name only what this
 * run started, and Ctrl-C stops everything within 3 s (npm's own exit included) and leaves no
 * process of the run behind.
 */
import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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

  it('by default: the sample pool ready, hints about it (and the plugin when built); Ctrl-C within 3 s', async () => {
    const run = (running = npmStart([]));
    await run.waitFor(/sample pool ready: 3\/3 replicas Running/, 240_000);
    await run.waitFor(/vmpool is running/);
    const dir = await planeDir(run);
    const text = run.lines.join('\n');
    expect(text).toContain('scale virtualmachinepool/runners -n vmpool-demo --replicas=5');
    expect(text).toMatch(
      /vmpool status runners -n vmpool-demo|npm run build also makes the kubectl plugin/,
    );
    const ms = await ctrlC(run);
    running = undefined;
    console.error(`[start] Ctrl-C to npm's exit (sample pool running): ${String(ms)} ms`);
    expect(ms).toBeLessThanOrEqual(3000);
    expect(await noLeftovers(dir, 5000)).toEqual([]);
  }, 300_000);
});
