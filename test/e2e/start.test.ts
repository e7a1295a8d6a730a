/**
 * `npm start` on its own embedded plane, as a user types it: the closing hints name only what this
 * run started, its functions act as identities of their own (a target written by hand into a pool's
 * scaledownwith annotation is refused, scaledownwith itself records one), and Ctrl-C stops
 * everything within 3 s (npm's own exit included) and leaves no process of the run behind. So does
 * SIGINT or SIGTERM to any one process of it (npm, node), and SIGKILL of any one of them: no
 * process and no directory of the run is left. `npm run cluster -- down` stops what a run left when
 * even its watchdogs died with it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { keys } from '../../shared/api/index.js';
import { runKubectl } from '../../local/controlplane/kubectl.js';
import type { Family, NpmStart } from './npm-start.js';
import {
  hintedKubectlBin,
  leftovers,
  noLeftovers,
  npmStart,
  running as isRunning,
  stoppedCleanly,
} from './npm-start.js';

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
  const bin = await hintedKubectlBin(run);
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
    // As the README writes them: PATH set once, then plain `kubectl …`, and a word on version skew.
    const hints = run.lines.slice(run.lines.findIndex((l) => l.includes('vmpool is running')));
    expect(hints.filter((l) => l.includes('export PATH=')).length).toBe(1);
    // Command lines (a note in parentheses is not one).
    const commands = hints.filter((l) => /^ {2}[^ (]/.test(l) && l.includes('kubectl'));
    expect(commands.length).toBeGreaterThan(1);
    for (const c of commands) expect(c).toMatch(/^ {2}(export PATH=\S+ +# .*kubectl|kubectl )/);
    expect(text).toMatch(/The plane's kubectl is v\d+\.\d+\.\d+.*version skew policy/);
    expect(await hintedKubectlBin(run)).toMatch(/\/kubectl$/);
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

/** A run with a temp directory of its own (TMPDIR): every process and directory of it mentions it. */
function isolatedRun(): { run: NpmStart; tmp: string } {
  const tmp = mkdtempSync(join(tmpdir(), 'vmpool-stop-test-'));
  const run = (running = npmStart(['--no-sample'], {
    TMPDIR: tmp,
    VMPOOL_CLUSTER_DIR: join(tmp, 'cluster'),
  }));
  return { run, tmp };
}

/** What of the run is left: processes mentioning `tmp`, and vmpool's directories in it. */
function whatIsLeft(tmp: string): { processes: number[]; dirs: string[] } {
  return {
    processes: leftovers(tmp),
    dirs: existsSync(tmp) ? readdirSync(tmp).filter((n) => n.startsWith('vmpool-')) : [],
  };
}

/** Milliseconds until nothing of the run is left (or 15 s): processes and directories. */
async function untilNothingLeft(tmp: string, t0: number): Promise<number> {
  while (performance.now() - t0 < 15_000) {
    const left = whatIsLeft(tmp);
    if (left.processes.length === 0 && left.dirs.length === 0) break;
    await sleep(50);
  }
  return Math.round(performance.now() - t0);
}

/** The process list of the run, for the report: `pid args` per line. */
function processList(pids: readonly number[]): string {
  return pids
    .map((pid) => {
      try {
        return `${String(pid)} ${readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8').replaceAll('\0', ' ')}`;
      } catch {
        return `${String(pid)} (gone)`;
      }
    })
    .join('\n');
}

/** /proc/PID/cmdline as it is (NUL between arguments); empty when the process is gone. */
function rawCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

async function startedFamily(run: NpmStart): Promise<{ readonly [K in keyof Family]: number }> {
  await run.waitFor(/vmpool is running/, 240_000);
  const f = run.family();
  if (f.node === undefined)
    throw new Error(`npm start's processes not found: ${JSON.stringify(f)}`);
  return { npm: f.npm, node: f.node };
}

/** npm runs node directly (tsx as its loader): no tsx process whose signal relay could misfire. */
const TARGETS = ['npm', 'node'] as const;

describe('any stop stops everything', () => {
  afterEach(() => {
    running = undefined;
  });

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGKILL'] as const)
    for (const target of TARGETS)
      it(`${signal} to ${target} alone: npm, node, the plane and the adapters gone and their directories removed within 3 s`, async () => {
        const { run, tmp } = isolatedRun();
        try {
          const family = await startedFamily(run);
          const before = leftovers(tmp);
          const t0 = performance.now();
          process.kill(family[target], signal);
          const ms = await untilNothingLeft(tmp, t0);
          const left = whatIsLeft(tmp);
          const own = run.lines
            .filter((l) => /"msg":"(stopped in|the process that started|stop took)/.test(l))
            .map((l) => /"msg":"([^"]*)"/.exec(l)?.[1] ?? '')
            .join('; ');
          console.error(
            `[stop] ${signal} to ${target} (pid ${String(family[target])}): nothing left after ${String(ms)} ms (of ${String(before.length)} processes); the run said: ${own || 'nothing'}; left: ${processList(left.processes) || 'none'}; dirs: ${left.dirs.join(', ') || 'none'}`,
          );
          expect(left).toEqual({ processes: [], dirs: [] });
          expect(TARGETS.filter((t) => isRunning(family[t]))).toEqual([]);
          expect(ms).toBeLessThanOrEqual(3000);
          if (signal !== 'SIGKILL' || target !== 'node')
            expect(run.lines.join('\n')).toMatch(/"msg":"stopped in \d+ ms"/);
        } finally {
          await run.stop().catch(() => undefined);
          rmSync(tmp, { recursive: true, force: true });
        }
      }, 300_000);

  it('npm run cluster -- down stops what a run left when its watchdogs died with it', async () => {
    const { run, tmp } = isolatedRun();
    try {
      const family = await startedFamily(run);
      // Every guard of the run dies with it: the watchdog and janitor shells, then node.
      const guards = leftovers(tmp).filter((pid) =>
        /^sh\0-c\0[^]*\0(watchdog|janitor)\0/.test(rawCmdline(pid)),
      );
      expect(guards.length).toBeGreaterThan(0);
      for (const pid of guards) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch (e) {
          // A guard's command substitution (`s=$(sed …)`) forks a short-lived copy of its shell,
          // with the same command line: listed a moment ago, it may be gone already.
          if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
        }
      }
      process.kill(family.node, 'SIGKILL');
      await run.exited;
      await sleep(1000);
      const orphans = leftovers(tmp);
      expect(orphans.length).toBeGreaterThan(0);
      const t0 = performance.now();
      const said = await new Promise<string>((resolve, reject) => {
        execFile(
          'npm',
          ['run', 'cluster', '--', 'down'],
          { cwd: REPO_ROOT, env: { ...process.env, VMPOOL_CLUSTER_DIR: join(tmp, 'cluster') } },
          (err, _out, errOut) => {
            if (err === null) resolve(errOut);
            else reject(new Error(`${err.message}\n${errOut}`));
          },
        );
      });
      const ms = await untilNothingLeft(tmp, t0);
      console.error(
        `[stop] cluster down after a run died with its guards: ${String(ms)} ms; ${said}`,
      );
      expect(said).toContain(`npm start (pid ${String(family.node)}, gone)`);
      expect(whatIsLeft(tmp)).toEqual({ processes: [], dirs: [] });
    } finally {
      await run.stop().catch(() => undefined);
      rmSync(tmp, { recursive: true, force: true });
    }
  }, 300_000);
});
