/**
 * `npm run cluster -- up|down|status`: a control plane for manual work and for running the functions
 * against. `up` leaves the processes running (detached) and records them in a state file in the cache
 * directory, so `down` and `status` from another shell find them.
 * @module
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runsFrom, startControlPlane, stopPids } from './cluster.js';
import { alive, stopPid } from './process.js';
import { clusterDir, recordedRuns, runAlive } from './runs.js';

interface State {
  dir: string;
  kubeconfigPath: string;
  server: string;
  binDir: string;
  /** In start order; stopped in reverse. */
  pids: Record<string, number>;
  startedAt: string;
}

const statePath = join(clusterDir(), 'state.json');

function readState(): State | undefined {
  if (!existsSync(statePath)) return undefined;
  return JSON.parse(readFileSync(statePath, 'utf8')) as State;
}

function running(s: State): boolean {
  return Object.values(s.pids).every((pid) => alive(pid) && runsFrom(pid, s.binDir));
}

async function down(): Promise<void> {
  const left = await downRuns();
  const s = readState();
  if (!s) {
    if (left === 0) console.error('cluster: nothing recorded, nothing to stop');
    return;
  }
  await stopPids(Object.values(s.pids).reverse(), s.binDir);
  rmSync(s.dir, { recursive: true, force: true });
  rmSync(statePath, { force: true });
  console.error(`cluster: stopped (${Object.keys(s.pids).join(', ')})`);
}

/**
 * Stops the planes runs of `npm start` recorded: a run still alive is asked to stop (SIGTERM, its
 * own clean stop), then whatever of its plane is left is killed and its directory removed.
 * Returns how many there were.
 */
async function downRuns(): Promise<number> {
  const runs = recordedRuns();
  for (const { path, run } of runs) {
    const t0 = Date.now();
    const live = runAlive(run.owner);
    if (live) await stopPid(run.owner, 5000);
    // A PID may have been reused since (pid_max is small here): only a process that still runs
    // the recorded binary is signalled.
    await Promise.all(
      run.processes.filter((p) => runsFrom(p.pid, p.binDir)).map((p) => stopPid(p.pid, 0)),
    );
    for (const dir of run.dirs) rmSync(dir, { recursive: true, force: true });
    rmSync(path, { force: true });
    console.error(
      `cluster: stopped what npm start (pid ${String(run.owner)}, ${live ? 'still running' : 'gone'}) left at ${run.server} in ${String(Date.now() - t0)} ms: ${run.processes.map((p) => p.name).join(', ')}; removed ${run.dirs.join(', ')}`,
    );
  }
  return runs.length;
}

async function up(): Promise<void> {
  const prev = readState();
  if (prev && running(prev)) {
    console.error(`cluster: already running at ${prev.server}`);
    console.log(`KUBECONFIG=${prev.kubeconfigPath}`);
    return;
  }
  // A half-dead plane from an earlier run is cleared first, so ports and PIDs are not mixed up.
  if (prev) await down();
  const t0 = Date.now();
  const cp = await startControlPlane({
    detached: true,
    keepDir: true,
    log: (l) => {
      console.error(`cluster: ${l}`);
    },
  });
  const state: State = {
    dir: cp.dir,
    kubeconfigPath: cp.kubeconfigPath,
    server: cp.server,
    binDir: cp.binDir,
    pids: cp.pids,
    startedAt: new Date().toISOString(),
  };
  mkdirSync(clusterDir(), { recursive: true });
  writeFileSync(statePath, `${JSON.stringify(state, null, 2)}\n`);
  console.error(`cluster: up in ${Date.now() - t0} ms; logs in ${cp.dir}; kubectl in ${cp.binDir}`);
  console.log(`KUBECONFIG=${cp.kubeconfigPath}`);
}

function status(): void {
  const s = readState();
  if (!s) {
    console.log('cluster: down');
    process.exitCode = 1;
    return;
  }
  for (const [name, pid] of Object.entries(s.pids)) {
    console.log(
      `${name.padEnd(24)} pid ${String(pid).padEnd(8)} ${alive(pid) ? 'running' : 'DEAD'}`,
    );
  }
  console.log(`server ${s.server} (since ${s.startedAt})`);
  console.log(`KUBECONFIG=${s.kubeconfigPath}`);
  if (!running(s)) process.exitCode = 1;
}

const cmd = process.argv[2] ?? '';
switch (cmd) {
  case 'up':
    await up();
    break;
  case 'down':
    await down();
    break;
  case 'status':
    status();
    break;
  default:
    console.error('usage: npm run cluster -- up|down|status');
    process.exitCode = 2;
}
