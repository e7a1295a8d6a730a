/**
 * A function of the benchmarks in its own process, started as the image starts it, fed PingSource
 * ticks: each tick's time, API requests by verb (from its /metrics) and the process's peak RSS.
 * @module
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pingInit } from '../local/events.js';
import type { FunctionName } from '../scripts/build.js';
import { imageStart } from '../scripts/image-start.js';
import { buildSnapshot } from '../scripts/snapshot.js';

/**
 * How a function is started: node's arguments, the working directory they are relative to, and the
 * environment the image adds.
 */
export interface Start {
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * The image's start of each function named: its snapshot built by this node into `dir/dist` (the
 * image's layout), and the image's exact start command run from `dir`.
 */
export async function imageStarts<N extends FunctionName>(
  dir: string,
  names: readonly N[],
): Promise<Record<N, Start>> {
  const out = {} as Record<N, Start>;
  for (const name of names) {
    await buildSnapshot(join(dir, 'dist'), name);
    const start = imageStart(name);
    out[name] = { args: [...start.command.slice(1), ...start.args], cwd: dir, env: start.env };
  }
  return out;
}

/** The port a started function listens on, from its `listening` log line (20 s at most). */
export function listeningPort(child: ChildProcess, what: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${what}: no "listening" line in 20 s`));
    }, 20_000);
    child.on('exit', (code) => {
      reject(new Error(`${what} exited with ${String(code)}`));
    });
    for (const stream of [child.stdout, child.stderr])
      if (stream !== null)
        createInterface({ input: stream }).on('line', (line) => {
          const m = /"port":(\d+)/.exec(line);
          if (m !== null && line.includes('listening')) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
  });
}

/**
 * The peak RSS of a running process so far (VmHWM), in MiB; undefined once it has exited (a
 * zombie's status has no memory lines) or is gone, never a figure it did not have.
 */
export function peakRss(pid: number): number | undefined {
  let s: string;
  try {
    s = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kib = /^VmHWM:\s+(\d+)/m.exec(s)?.[1];
  return kib === undefined ? undefined : Math.round(Number(kib) / 1024);
}

/**
 * The peak RSS of a process read every `everyMs` while it runs: what a failure report can still
 * give once the process is gone (its /proc entry with it).
 */
export function peakWatcher(
  pid: number,
  everyMs = 250,
): { last(): number | undefined; stop(): void } {
  let last: number | undefined;
  const read = (): void => {
    // A peak only grows; an exited (zombie) or reaped process has none: keep what was read while
    // it ran.
    const now = peakRss(pid);
    if (now !== undefined) last = Math.max(last ?? 0, now);
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    last() {
      read();
      return last;
    },
    stop() {
      clearInterval(timer);
    },
  };
}

/** A memory cgroup the function runs in, as a pod's memory limit would hold it. */
interface MemoryLimit {
  /** Where the started shell writes its pid before it execs node. */
  readonly procs: string;
  /** How many times the kernel has killed a process of the cgroup for memory. */
  oomKills(): number;
  remove(): void;
}

/**
 * A memory cgroup (v2, or v1's memory hierarchy) of `bytes` under this process's own, when this
 * machine lets us make one; undefined otherwise (the run is then unconstrained, and says so).
 */
function memoryLimit(bytes: number): MemoryLimit | undefined {
  try {
    const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
    const v1 = lines.find((l) => /^\d+:memory:/.test(l))?.split(':')[2];
    const v2 = lines.find((l) => l.startsWith('0::'))?.slice(3);
    const base =
      v1 !== undefined ? join('/sys/fs/cgroup/memory', v1) : join('/sys/fs/cgroup', v2 ?? '/');
    const dir = join(base, `vmpool-bench-${process.pid}`);
    mkdirSync(dir);
    writeFileSync(
      join(dir, v1 !== undefined ? 'memory.limit_in_bytes' : 'memory.max'),
      String(bytes),
    );
    const events = join(dir, v1 !== undefined ? 'memory.oom_control' : 'memory.events');
    return {
      procs: join(dir, 'cgroup.procs'),
      oomKills: () => {
        try {
          return Number(/oom_kill (\d+)/.exec(readFileSync(events, 'utf8'))?.[1] ?? 0);
        } catch {
          return 0;
        }
      },
      remove: () => {
        try {
          rmdirSync(dir);
        } catch {
          // A cgroup still holding a process is removed with the machine's session.
        }
      },
    };
  } catch {
    return undefined;
  }
}

/** The pods' memory limit in knative/base (reconcile-pool, disk-gc-tick). */
export const POD_MEMORY_LIMIT = 256 * 1024 * 1024;

/** A counter of a Prometheus text page summed by one of its labels (the others added up). */
export function counterBy(page: string, metric: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  const line = new RegExp(`^${metric}\\{([^}]*)\\} (\\d+)`, 'gm');
  const value = new RegExp(`(?:^|,)${label}="([^"]*)"`);
  for (const m of page.matchAll(line)) {
    const key = value.exec(m[1] ?? '')?.[1] ?? '';
    out[key] = (out[key] ?? 0) + Number(m[2]);
  }
  return out;
}

/** `vmpool_api_requests_total` by verb, from a Prometheus text page. */
export const requestsByVerb = (page: string): Record<string, number> =>
  counterBy(page, 'vmpool_api_requests_total', 'verb');

/**
 * `vmpool_reconciles_total` by outcome: one per event handled (an own write answered without a
 * read, or the outcome of the reconcile it joined), from a Prometheus text page.
 */
export const reconcilesByOutcome = (page: string): Record<string, number> =>
  counterBy(page, 'vmpool_reconciles_total', 'outcome');

/** Calls of one verb between two /metrics pages: how many, and their latencies summed (ms). */
export interface VerbTime {
  readonly count: number;
  readonly ms: number;
}

/** Sum and count of `vmpool_api_request_duration_seconds` by verb, from a /metrics page. */
function apiSeconds(page: string): Map<string, { sum: number; count: number }> {
  const out = new Map<string, { sum: number; count: number }>();
  for (const m of page.matchAll(
    /^vmpool_api_request_duration_seconds_(sum|count)\{verb="([^"]*)"\} (\S+)/gm,
  )) {
    const [, part = '', verb = '', value = '0'] = m;
    const v = out.get(verb) ?? { sum: 0, count: 0 };
    v[part === 'sum' ? 'sum' : 'count'] = Number(value);
    out.set(verb, v);
  }
  return out;
}

/** A function's API calls by verb between two of its /metrics pages. */
export function apiTimeSince(before: string, after: string): Record<string, VerbTime> {
  const b = apiSeconds(before);
  const out: Record<string, VerbTime> = {};
  for (const [verb, a] of apiSeconds(after)) {
    const count = a.count - (b.get(verb)?.count ?? 0);
    if (count > 0) out[verb] = { count, ms: (a.sum - (b.get(verb)?.sum ?? 0)) * 1000 };
  }
  return out;
}

/** Mean latency in ms by verb between two /metrics pages. */
export function apiMsSince(before: string, after: string): Record<string, number> {
  return Object.fromEntries(
    Object.entries(apiTimeSince(before, after)).map(([verb, t]) => [verb, t.ms / t.count]),
  );
}

/** Each key's growth from `b` to `a`, the keys that grew only. */
export const minus = (
  a: Record<string, number>,
  b: Record<string, number>,
): Record<string, number> =>
  Object.fromEntries(
    Object.entries(a)
      .map(([k, v]) => [k, v - (b[k] ?? 0)] as const)
      .filter(([, v]) => v > 0),
  );

const READS = new Set(['get', 'list']);

/** One event delivered to a function in its own process. */
export interface FunctionTick {
  readonly ms: number;
  /** Requests of the tick by verb (from the function's /metrics). */
  readonly requests: Record<string, number>;
  readonly writes: number;
  /** VmHWM of the process after the tick: its start included. */
  readonly peakRssMiB: number;
}

/**
 * Starts a function (`start`: as the image does, see memory.ts), in a memory cgroup of the pods'
 * limit when this machine allows one, delivers `ticks` PingSource events one after another, and
 * reads its peak RSS after them.
 */
export async function functionTicks(
  start: Start,
  kubeconfigPath: string,
  ticks: number,
  log: (l: string) => void,
  what: string,
): Promise<FunctionTick[]> {
  const limit = memoryLimit(POD_MEMORY_LIMIT);
  // In the cgroup before node starts: a shell joins it, then becomes node.
  const [cmd, args] =
    limit === undefined
      ? [process.execPath, [...start.args]]
      : ['sh', ['-c', 'echo $$ > "$0" && exec "$@"', limit.procs, process.execPath, ...start.args]];
  const child = spawn(cmd, args, {
    env: { ...start.env, PATH: process.env.PATH, KUBECONFIG: kubeconfigPath, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(start.cwd === undefined ? {} : { cwd: start.cwd }),
  });
  // The last words of the process, for a tick that fails (a heap limit, a kill by the cgroup).
  let outputTail = '';
  for (const stream of [child.stdout, child.stderr])
    stream.on('data', (c: Buffer) => {
      outputTail = (outputTail + c.toString('utf8')).slice(-2000);
    });
  log(
    `${what}: ${limit === undefined ? 'no memory cgroup could be made: unconstrained' : `in a memory cgroup of ${POD_MEMORY_LIMIT / 1048576} MiB (the pod's limit)`}`,
  );
  const peak = peakWatcher(child.pid ?? 0);
  try {
    const port = await listeningPort(child, what);
    const base = `http://127.0.0.1:${port}`;
    const metrics = async () => requestsByVerb(await (await fetch(`${base}/metrics`)).text());
    const out: FunctionTick[] = [];
    for (let i = 0; i < ticks; i++) {
      const before = await metrics();
      const s = performance.now();
      const res = await fetch(`${base}/`, {
        ...pingInit({}, `/bench/${what}`),
        signal: AbortSignal.timeout(600_000),
      }).catch(async (err: unknown) => {
        await new Promise((r) => setTimeout(r, 500));
        const cause = (err as { cause?: { message?: string } }).cause?.message ?? String(err);
        const exit = child.exitCode ?? child.signalCode ?? 'still running';
        throw new Error(
          `${what} tick ${i + 1} failed after ${((performance.now() - s) / 1000).toFixed(0)} s: ${cause}; the process: ${exit}, OOM kills in its cgroup: ${limit?.oomKills() ?? 'no cgroup'}, peak RSS ${peak.last() ?? '?'} MiB (last read while it ran); its last output: ${outputTail.slice(-800) || '(none)'}`,
        );
      });
      await res.arrayBuffer();
      const ms = performance.now() - s;
      if (res.status >= 300) throw new Error(`${what} tick answered ${res.status}`);
      const requests = minus(await metrics(), before);
      const peakRssMiB = peak.last();
      if (peakRssMiB === undefined) throw new Error(`${what} tick ${i + 1}: the process exited`);
      const writes = Object.entries(requests)
        .filter(([verb]) => !READS.has(verb))
        .reduce((n, [, v]) => n + v, 0);
      out.push({ ms, requests, writes, peakRssMiB });
      log(
        `${what} tick ${i + 1}/${ticks}: ${ms.toFixed(0)} ms, peak RSS ${peakRssMiB} MiB, ${JSON.stringify(requests)}`,
      );
    }
    return out;
  } finally {
    peak.stop();
    child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 200));
    limit?.remove();
  }
}
