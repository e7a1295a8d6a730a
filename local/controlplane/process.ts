/**
 * Child processes of the test control plane: free ports, detached process groups with logs in files,
 * and a stop that kills the whole group by PID, so nothing outlives the harness.
 * @module
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Asks the kernel for a free TCP port on 127.0.0.1 (it may be taken again before use; rare enough). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => {
        if (addr !== null && typeof addr === 'object') resolve(addr.port);
        else reject(new Error('no port'));
      });
    });
  });
}

/** A started child process; its PID is also its process group id. */
export interface Proc {
  readonly name: string;
  readonly pid: number;
  readonly logPath: string;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  readonly exited: Promise<number | string>;
}

/** Options of {@link startProcess}. */
export interface StartOptions {
  name: string;
  bin: string;
  args: string[];
  logPath: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * Kill the process group when this Node process dies, however it dies (default true). Off for
   * `cluster up`, whose processes must outlive it.
   */
  watchdog?: boolean;
}

/**
 * A shell that polls the parent and the child; when the parent is gone (even after SIGKILL, when no
 * exit hook runs, or an orphaned vitest worker) it terminates the child's group, then kills it.
 */
function startWatchdog(child: number): void {
  const script = [
    'p=$1; c=$2',
    'while kill -0 "$p" 2>/dev/null && kill -0 "$c" 2>/dev/null; do sleep 0.5; done',
    'kill -0 "$c" 2>/dev/null || exit 0',
    'kill -TERM -"$c" 2>/dev/null; sleep 3; kill -KILL -"$c" 2>/dev/null; exit 0',
  ].join('\n');
  const dog = spawn('sh', ['-c', script, 'watchdog', String(process.pid), String(child)], {
    detached: true,
    stdio: 'ignore',
  });
  dog.unref();
}

/**
 * Starts a binary in its own process group (detached), stdout+stderr appended to `logPath`.
 * Detached so a `cluster up` can exit and leave it running, and so a stop can signal the group.
 */
export function startProcess(o: StartOptions): Proc {
  const fd = openSync(o.logPath, 'a');
  try {
    const child = spawn(o.bin, o.args, {
      detached: true,
      stdio: ['ignore', fd, fd],
      env: o.env ?? process.env,
      cwd: o.cwd,
    });
    if (child.pid === undefined) throw new Error(`${o.name}: spawn failed (${o.bin})`);
    const exited = new Promise<number | string>((resolve) => {
      child.on('exit', (code, signal) => {
        resolve(code ?? signal ?? 'unknown');
      });
      child.on('error', (err) => {
        resolve(err.message);
      });
    });
    // The parent must not wait for the child: `cluster up` exits while the plane keeps running.
    child.unref();
    if (o.watchdog !== false) startWatchdog(child.pid);
    return { name: o.name, pid: child.pid, logPath: o.logPath, exited };
  } finally {
    closeSync(fd);
  }
}

/** Whether a PID exists (signal 0 probes without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM means it exists but is not ours; treat it as alive so we never claim it stopped.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, sig);
    } catch {
      // already gone
    }
  }
}

/**
 * Stops a process group by PID: SIGTERM, then SIGKILL after `graceMs`. Works for PIDs recorded in a
 * state file by another process too (no ChildProcess handle needed).
 */
export async function stopPid(pid: number, graceMs = 5000): Promise<void> {
  if (!alive(pid)) return;
  signalGroup(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!alive(pid)) return;
    await sleep(50);
  }
  signalGroup(pid, 'SIGKILL');
  while (alive(pid) && Date.now() < deadline + 5000) await sleep(50);
}

/** Synchronous best-effort kill, for `process.on('exit')` where nothing async runs any more. */
export function killNow(pid: number): void {
  signalGroup(pid, 'SIGKILL');
}

/** The last `lines` lines of a log file, for error messages of failed starts. */
export function tail(path: string, lines = 40): string {
  if (!existsSync(path)) return `(no log at ${path})`;
  return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
}

/**
 * Polls `probe` until it returns true; fails with the process log when the process dies or the time
 * runs out, because "timed out" alone never says why a component did not come up.
 */
export async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  opts: { timeoutMs: number; proc?: Proc; intervalMs?: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let dead: number | string | undefined;
  void opts.proc?.exited.then((c) => (dead = c));
  for (;;) {
    if (dead !== undefined && opts.proc) {
      throw new Error(
        `${opts.proc.name} exited (${dead}) while waiting for ${what}:\n${tail(opts.proc.logPath)}`,
      );
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) {
      const log = opts.proc ? `\n${tail(opts.proc.logPath)}` : '';
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}${log}`);
    }
    await sleep(opts.intervalMs ?? 100);
  }
}
