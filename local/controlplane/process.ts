/**
 * Child processes of the test control plane: free ports, detached process groups with logs in files,
 * and a stop that kills the whole group by PID, so nothing outlives the harness.
 * @module
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Asks the kernel for a free TCP port on 127.0.0.1. Another process may bind it before the child
 * does: `startControlPlane` then starts that component again on fresh ports.
 */
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

/** Times a child is started on fresh ports after another process took one of them first. */
export const PORT_ATTEMPTS = 3;

/** A child that exited while {@link waitFor} waited for it to be ready, with its own log. */
export class ChildExited extends Error {
  /** The end of what this start of the child logged (earlier starts into the same file left out). */
  readonly log: string;
  constructor(child: string, code: number | string, what: string, log: string) {
    super(`${child} exited (${String(code)}) while waiting for ${what}:\n${log}`);
    this.log = log;
  }
}

/**
 * The child exited because a port it was given was bound by another process between being found
 * free and being bound (a plane starting beside it, or any other listener on the host).
 */
export function portTaken(err: unknown): boolean {
  return err instanceof ChildExited && /address already in use/.test(err.log);
}

/**
 * Runs `run` on `count` ports found free; when the child it starts exits because one of them was
 * taken in between, calls `retried` (the child is gone: nothing of it to stop) and runs it again on
 * fresh ports, up to {@link PORT_ATTEMPTS} times. Any other failure is thrown at once.
 */
export async function onFreePorts<T>(
  count: number,
  run: (ports: readonly number[]) => Promise<T>,
  opts: { port?: () => Promise<number>; retried?: (ports: readonly number[]) => void } = {},
): Promise<T> {
  const port = opts.port ?? freePort;
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) ports.push(await port());
    try {
      return await run(ports);
    } catch (err) {
      if (attempt >= PORT_ATTEMPTS || !portTaken(err)) throw err;
      opts.retried?.(ports);
    }
  }
}

/** A started child process; its PID is also its process group id. */
export interface Proc {
  readonly name: string;
  readonly pid: number;
  readonly logPath: string;
  /** Bytes the log held before this process started (a restart appends to the same file). */
  readonly logFrom?: number;
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
  /**
   * A directory the watchdog removes once it has killed the child (a forced stop leaves no data
   * behind); unset for a directory kept for post-mortems.
   */
  cleanup?: string;
}

/**
 * `up PID` in sh: the process runs, and is not a zombie (an orphan's exit is reaped by PID 1, which
 * may take its time, and a zombie still answers `kill -0`). Without /proc, `kill -0`.
 */
const UP = [
  'up() {',
  '  if [ -r "/proc/$1/stat" ]; then s=$(sed "s/.*) //" "/proc/$1/stat" 2>/dev/null | cut -c1)',
  '  else kill -0 "$1" 2>/dev/null; return; fi',
  '  [ -n "$s" ] && [ "$s" != Z ]',
  '}',
].join('\n');

/**
 * A shell that polls the parent and the child; when the parent is gone (even after SIGKILL, when no
 * exit hook runs, or an orphaned vitest worker) it kills the child's group and removes `cleanup`
 * (data thrown away needs no graceful exit); without `cleanup` the group gets SIGTERM and a second.
 */
function startWatchdog(child: number, cleanup?: string): void {
  const script = [
    UP,
    'p=$1; c=$2; d=$3',
    'while up "$p" && up "$c"; do sleep 0.2; done',
    'up "$c" || exit 0',
    // Data that is removed next needs no graceful exit; otherwise a second for one.
    '[ -n "$d" ] || kill -TERM -"$c" 2>/dev/null',
    'for i in 1 2 3 4 5; do [ -n "$d" ] && break; up "$c" || break; sleep 0.2; done',
    'kill -KILL -"$c" 2>/dev/null',
    'for i in 1 2 3 4 5 6 7 8 9 10; do up "$c" || break; sleep 0.1; done',
    '[ -n "$d" ] && rm -rf "$d"',
    'exit 0',
  ].join('\n');
  const dog = spawn(
    'sh',
    ['-c', script, 'watchdog', String(process.pid), String(child), cleanup ?? ''],
    { detached: true, stdio: 'ignore' },
  );
  dog.unref();
}

/**
 * Removes `paths` once this process is gone, however it goes (SIGKILL included): for what a run
 * owns outside its children's directories. A normal stop removes them itself first.
 */
export function removeWhenGone(paths: readonly string[]): void {
  const script = [UP, 'p=$1; shift', 'while up "$p"; do sleep 0.2; done', 'rm -rf "$@"'].join('\n');
  spawn('sh', ['-c', script, 'janitor', String(process.pid), ...paths], {
    detached: true,
    stdio: 'ignore',
  }).unref();
}

/**
 * The processes that launched this one and whose end should end it too: the chain of parents
 * while they are `tsx`, `npm` or a shell of npm's (`npm start` → tsx → node). Linux /proc only;
 * empty elsewhere.
 */
export function launchers(): number[] {
  const chain: number[] = [];
  let pid: number | undefined = process.ppid;
  while (pid !== undefined && pid > 1 && chain.length < 4) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      break;
    }
    if (!/\btsx\b|\bnpm\b|^sh -c /.test(cmdline)) break;
    chain.push(pid);
    pid = parentOf(pid);
  }
  return chain;
}

/**
 * Whether a PID runs: a zombie does not (a launcher killed but not yet reaped by its own parent
 * still answers signal 0, and this process is re-parented only once it is reaped).
 */
function runningProcess(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${String(pid)}/stat`, 'utf8');
  } catch {
    return existsSync('/proc/self') ? false : alive(pid);
  }
  return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
}

/** The parent PID as /proc says now (Node's `process.ppid` is read once, at start). */
function parentOf(pid: number | 'self'): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 4, after the parenthesised command name (which may hold spaces).
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * Calls `onGone` once, when a launcher (see {@link launchers}) is gone or this process was
 * re-parented: a SIGTERM that ended npm alone, a SIGKILL of npm or tsx. Polls every 200 ms.
 */
export function onLaunchersGone(onGone: (pid: number) => void): () => void {
  const chain = launchers();
  const parent = process.ppid;
  const timer = setInterval(() => {
    const now = parentOf('self');
    const gone =
      now !== undefined && now !== parent ? parent : chain.find((pid) => !runningProcess(pid));
    if (gone === undefined) return;
    clearInterval(timer);
    onGone(gone);
  }, 200);
  timer.unref();
  return () => {
    clearInterval(timer);
  };
}

/**
 * Starts a binary in its own process group (detached), stdout+stderr appended to `logPath`.
 * Detached so a `cluster up` can exit and leave it running, and so a stop can signal the group.
 */
export function startProcess(o: StartOptions): Proc {
  const fd = openSync(o.logPath, 'a');
  try {
    const logFrom = fstatSync(fd).size;
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
    if (o.watchdog !== false) startWatchdog(child.pid, o.cleanup);
    return { name: o.name, pid: child.pid, logPath: o.logPath, logFrom, exited };
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

/**
 * The last `lines` lines of a log file, for error messages of failed starts; from byte `from` on
 * (a process's `logFrom`: what earlier processes wrote to the same file left out).
 */
export function tail(path: string, lines = 40, from = 0): string {
  if (!existsSync(path)) return `(no log at ${path})`;
  return readFileSync(path).subarray(from).toString('utf8').split('\n').slice(-lines).join('\n');
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
      throw new ChildExited(
        opts.proc.name,
        dead,
        what,
        tail(opts.proc.logPath, 40, opts.proc.logFrom),
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
