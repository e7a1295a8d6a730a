/**
 * Where the benchmark's processes run: the control plane (etcd, kube-apiserver, the controller
 * managers, ReplicaSet's included) on some CPUs and the client side (this process with its Broker
 * simulation, watches and raw loop, and the processes it spawned: reconcile-pool's own, the
 * adapters) on the others, as a cluster runs them, so
 * the API server's own limit bounds both sides; or every process on every CPU, as a laptop runs them.
 * Placement is `taskset -a -p -c` on running processes (every thread; threads started later inherit
 * it), so the plane is started as usual and the two placements can alternate within one run.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/** `separate`: plane and clients on CPUs of their own; `shared`: everything on every CPU. */
export type CpuMode = 'separate' | 'shared';

/** A placement applied to the processes, as the table states it. */
export interface Placement {
  /** What was asked. */
  readonly mode: CpuMode;
  /** What was done: `separate` only when it could be (≥ 2 CPUs and taskset). */
  readonly applied: CpuMode;
  /** CPU lists (as taskset reads them) of the plane and of the clients. */
  readonly plane: string;
  readonly clients: string;
  /** One line for the table, e.g. `control plane 0, clients 1 (taskset)`. */
  readonly text: string;
}

/** The CPUs listed by a `Cpus_allowed_list` value (`0-3,6`). */
export function parseCpuList(list: string): number[] {
  return list
    .trim()
    .split(',')
    .filter((part) => part !== '')
    .flatMap((part) => {
      const [a = NaN, b = a] = part.split('-').map(Number);
      return Array.from({ length: b - a + 1 }, (_, i) => a + i);
    });
}

/** The `Cpus_allowed_list` of a process or thread (`/proc/<pid>[/task/<tid>]/status`). */
export function allowedCpus(path: string): string {
  const status = readFileSync(`${path}/status`, 'utf8');
  return /^Cpus_allowed_list:\s*(.*)$/m.exec(status)?.[1]?.trim() ?? '';
}

/** This process's CPUs as it started, before any placement narrowed them: "every CPU". */
const EVERY_CPU = parseCpuList(allowedCpus('/proc/self'));

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Every process whose parent chain leads to `root` (Linux /proc), `root` excluded. */
export function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone since the listing.
    }
  }
  const out: number[] = [];
  const walk = (pid: number): void => {
    for (const [child, p] of parent)
      if (p === pid) {
        out.push(child);
        walk(child);
      }
  };
  walk(root);
  return out;
}

/** Pins every thread of `pid` to `cpus` and checks each thread's allowed list says so. */
function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
  const want = parseCpuList(cpus).join(',');
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let got: string;
    try {
      got = parseCpuList(allowedCpus(`/proc/${pid}/task/${tid}`)).join(',');
    } catch {
      continue; // A thread that ended meanwhile.
    }
    if (got !== want) throw new Error(`pid ${pid} thread ${tid}: CPUs ${got}, not ${want}`);
  }
}

/**
 * Places the plane's processes (`planePids` and their children) and this process with every other
 * descendant of it (reconcile-pool's process and the adapters among them), each thread checked. `separate` gives the plane the first half of this process's CPUs and the clients the
 * rest; with fewer than 2 CPUs or without taskset the run stays shared and says so.
 */
export function placeProcesses(mode: CpuMode, planePids: readonly number[]): Placement {
  const all = EVERY_CPU;
  const everyCpu = all.join(',');
  const tool = hasTaskset();
  const can = canSeparate();
  const applied: CpuMode = mode === 'separate' && can ? 'separate' : 'shared';
  const half = Math.floor(all.length / 2);
  const plane = applied === 'separate' ? all.slice(0, half).join(',') : everyCpu;
  const clients = applied === 'separate' ? all.slice(half).join(',') : everyCpu;
  if (tool) {
    const planeSet = new Set(planePids.flatMap((p) => [p, ...descendants(p)]));
    for (const p of planeSet) pin(p, plane);
    for (const p of [process.pid, ...descendants(process.pid)])
      if (!planeSet.has(p)) {
        try {
          pin(p, clients);
        } catch (err) {
          // A short-lived child (a shell) may end between the listing and taskset.
          if (isRunning(p)) throw err;
        }
      }
  }
  const why =
    mode === 'separate' && !can
      ? `; separation asked, but ${!tool ? 'taskset is missing' : `only ${all.length} CPU`}`
      : '';
  const text =
    applied === 'separate'
      ? `control plane ${plane}, clients ${clients} (taskset)`
      : `shared: every process on CPUs ${everyCpu}${why}`;
  return { mode, applied, plane, clients, text };
}

function isRunning(pid: number): boolean {
  try {
    readFileSync(`/proc/${pid}/stat`);
    return true;
  } catch {
    return false;
  }
}

/** Whether this machine can separate the plane from the clients: 2 CPUs or more, and taskset. */
export function canSeparate(): boolean {
  return EVERY_CPU.length >= 2 && hasTaskset();
}

/**
 * `--cpus=separate|shared|both` → the placements to run, in order (default both). Where separation
 * cannot be had, `both` is one shared run (its row says why), not the same run twice.
 */
export function cpuModes(arg: string | undefined): CpuMode[] {
  if (arg === undefined || arg === 'both')
    return canSeparate() ? ['separate', 'shared'] : ['separate'];
  if (arg === 'separate' || arg === 'shared') return [arg];
  throw new Error(`--cpus=${arg}: expected separate, shared or both`);
}
