/**
 * The user's own path as a child process: the real `npm start -- …` (npm, and node running scripts/start.ts with tsx as its loader) in
 * a process group of its own, its output collected line by line, stopped with Ctrl-C's SIGINT, and
 * checked for leftovers afterwards. Also a plane of its own per test file (CRDs chosen by the test)
 * and where the platform's real CRDs are.
 * @module
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { FIXTURE_CRD_DIR } from '../../local/controlplane/crds.js';

/** A running `npm start`. */
export interface NpmStart {
  /** Every line of stdout and stderr so far. */
  readonly lines: string[];
  /** Resolves with the exit code (or the signal that ended npm) once the command is gone. */
  readonly exited: Promise<number | string>;
  /** Resolves with the first line matching `re` (rejects on exit or after `timeoutMs`). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  /**
   * SIGINT to the group, as Ctrl-C in a terminal, then the exit code or signal (npm re-raises the
   * SIGINT it got, so a clean stop ends npm by `SIGINT`); SIGKILL and a rejection after 30 s.
   */
  stop(): Promise<number | string>;
  /** The PIDs of npm and of the node process it runs (scripts/start.ts, tsx as a loader). */
  family(): Family;
}

/** The processes of one `npm start`. */
export interface Family {
  readonly npm: number;
  readonly node: number | undefined;
}

/** PIDs whose parent is `pid`, from /proc. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const p = Number(entry);
    if (!Number.isInteger(p)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(p);
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** The command line of a PID, spaces between the arguments; empty when it is gone. */
function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** Whether a PID is still a process (a zombie counts as gone). */
export function running(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${String(pid)}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Spawns `npm start -- <args>` from the repository root, in a process group of its own. */
export function npmStart(args: readonly string[], env: NodeJS.ProcessEnv = {}): NpmStart {
  const child = spawn('npm', ['start', '--', ...args], {
    cwd: REPO_ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info', NO_COLOR: '1', ...env },
  });
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  const feed = (chunk: Buffer, rest: { s: string }) => {
    rest.s += chunk.toString();
    const parts = rest.s.split('\n');
    rest.s = parts.pop() ?? '';
    lines.push(...parts);
    for (const w of waiters.splice(0)) w();
  };
  const out = { s: '' };
  const err = { s: '' };
  child.stdout.on('data', (c: Buffer) => {
    feed(c, out);
  });
  child.stderr.on('data', (c: Buffer) => {
    feed(c, err);
  });
  let done = false;
  const exited = new Promise<number | string>((ok) => {
    child.on('exit', (code, signal) => {
      done = true;
      for (const w of waiters.splice(0)) w();
      ok(code ?? signal ?? 'unknown');
    });
  });
  const pgid = child.pid ?? 0;
  return {
    lines,
    exited,
    family() {
      const node = childrenOf(pgid).find((c) => cmdline(c).includes('scripts/start.ts'));
      return { npm: pgid, node };
    },
    async waitFor(re, timeoutMs = 120_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = lines.find((l) => re.test(l));
        if (hit !== undefined) return hit;
        if (done) throw new Error(`npm start exited before ${String(re)}:\n${lines.join('\n')}`);
        if (Date.now() > deadline)
          throw new Error(`no ${String(re)} after ${timeoutMs} ms:\n${lines.join('\n')}`);
        await Promise.race([new Promise<void>((r) => waiters.push(r)), sleep(500)]);
      }
    },
    async stop() {
      if (!done) {
        try {
          process.kill(-pgid, 'SIGINT');
        } catch {
          // Already gone.
        }
      }
      const code = await Promise.race([exited, sleep(30_000).then(() => 'timeout' as const)]);
      if (code === 'timeout') {
        process.kill(-pgid, 'SIGKILL');
        throw new Error(`npm start did not stop within 30 s of SIGINT:\n${lines.join('\n')}`);
      }
      return code;
    },
  };
}

/**
 * The kubectl the hints mean: `kubectl` looked up in the directories of their `export PATH=…` line,
 * as a shell that ran that line would (the system's `kubectl` when the line names none).
 */
export async function hintedKubectlBin(run: NpmStart): Promise<string> {
  await run.waitFor(/vmpool is running/);
  const line = run.lines.find((l) => /^\s*export PATH=/.test(l));
  const dirs = (line?.replace(/^\s*export PATH=/, '').split(/\s/)[0] ?? '')
    .split(':')
    .filter((d) => d !== '$PATH' && d !== '');
  return dirs.map((d) => join(d, 'kubectl')).find((p) => existsSync(p)) ?? 'kubectl';
}

/** PIDs of processes (other than this one) whose command line or environment mentions `marker`. */
export function leftovers(marker: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    for (const f of ['cmdline', 'environ']) {
      try {
        if (readFileSync(`/proc/${pid}/${f}`, 'utf8').includes(marker)) {
          out.push(pid);
          break;
        }
      } catch {
        // Gone meanwhile, or not ours to read.
      }
    }
  }
  return out;
}

/** Waits until no process mentions `marker` (watchdogs stop adapters within a second or so). */
export async function noLeftovers(marker: string, timeoutMs = 10_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = leftovers(marker);
    if (left.length === 0 || Date.now() > deadline) return left;
    await sleep(250);
  }
}

/** A copy of a plane's admin kubeconfig that only vmpool's processes will mention. */
export function vmpoolKubeconfig(planeKubeconfig: string, dir: string): string {
  const path = join(dir, 'vmpool-attach.kubeconfig');
  copyFileSync(planeKubeconfig, path);
  return path;
}

/**
 * The platform's real CRDs: `VMPOOL_DVP_CRDS`, else the shared fixtures beside the repository (so
 * CI's second pass, which clears the variable, still runs on them), else undefined.
 */
export function realPlatformCrdDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env.VMPOOL_DVP_CRDS;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const shared = join(REPO_ROOT, '..', 'shared', 'fixtures', 'dvp-crds');
  return existsSync(shared) ? shared : undefined;
}

/** {@link realPlatformCrdDir}, or the project's minimal fixtures when there are none. */
export function platformCrdDirForAttach(): string {
  return realPlatformCrdDir() ?? FIXTURE_CRD_DIR;
}

/**
 * True when vmpool itself stopped cleanly: it logged `stopping`, no stop step failed, and the command
 * ended by exit 0 or by the SIGINT npm re-raises after its child exited.
 */
export function stoppedCleanly(run: NpmStart, ended: number | string): boolean {
  const log = run.lines.join('\n');
  return (
    (ended === 0 || ended === 'SIGINT') &&
    log.includes('"msg":"stopping"') &&
    !/"msg":"stopping the [^"]* failed"/.test(log) &&
    !log.includes('exiting anyway')
  );
}

/** Polls `f` every 250 ms until it returns a value other than undefined; fails after `ms` naming `what`. */
export async function until<T>(
  what: string,
  ms: number,
  f: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
