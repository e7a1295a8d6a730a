/**
 * What runs where: each `npm start` records what it started (PIDs, binaries, directories)
 * under the cache directory, so a later `npm run cluster -- down` finds a plane a run left behind
 * (a run killed before its stop, or one whose watchdogs could not finish) and stops it.
 * @module
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from './binaries.js';

/** A process a run started, and the directory of its binary (checked before it is signalled). */
export interface RecordedProcess {
  readonly name: string;
  readonly pid: number;
  readonly binDir: string;
}

/** What a run of `npm start` started. */
export interface RunRecord {
  /** The PID of the run (the node process of scripts/start.ts). */
  readonly owner: number;
  /** The plane's API server. */
  readonly server: string;
  readonly startedAt: string;
  /** The plane's processes and the adapters, in start order. */
  readonly processes: RecordedProcess[];
  /** Directories of the run: the plane's data, certificates, the adapters' logs. */
  readonly dirs: string[];
}

/**
 * Where `npm run cluster` keeps its state and the runs' records: `VMPOOL_CLUSTER_DIR`, else
 * `cluster/` in the cache directory (tests keep theirs apart from a developer's).
 */
export function clusterDir(): string {
  return process.env.VMPOOL_CLUSTER_DIR ?? join(cacheRoot(), 'cluster');
}

/** The directory of run records. */
export function runsDir(): string {
  return join(clusterDir(), 'runs');
}

/** The record file of the run `owner`. */
export function recordPath(owner: number): string {
  return join(runsDir(), `${String(owner)}.json`);
}

/** Writes the record of a run; returns its path (removed by the run's stop, or by `down`). */
export function recordRun(r: RunRecord): string {
  mkdirSync(runsDir(), { recursive: true });
  const path = recordPath(r.owner);
  writeFileSync(path, `${JSON.stringify(r, null, 2)}\n`);
  return path;
}

/** Every recorded run, with its file; a record that does not parse is skipped. */
export function recordedRuns(): Array<{ readonly path: string; readonly run: RunRecord }> {
  if (!existsSync(runsDir())) return [];
  const out: Array<{ path: string; run: RunRecord }> = [];
  for (const f of readdirSync(runsDir()).filter((n) => n.endsWith('.json'))) {
    const path = join(runsDir(), f);
    try {
      out.push({ path, run: JSON.parse(readFileSync(path, 'utf8')) as RunRecord });
    } catch {
      rmSync(path, { force: true });
    }
  }
  return out;
}

/** True while the run `owner` still runs scripts/start.ts (its PID may have been reused since). */
export function runAlive(owner: number): boolean {
  try {
    return readFileSync(`/proc/${String(owner)}/cmdline`, 'utf8').includes('scripts/start.ts');
  } catch {
    return false;
  }
}
