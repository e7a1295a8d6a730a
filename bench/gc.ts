/**
 * Benchmark 4c, disk-gc-tick at scale: pools with N free Retain disks each (keep N−1), freed minutes
 * ago; GC passes with nothing due, each beside the floor (the same objects listed bare), then one
 * with the GC's clock two hours later, when the oldest disk of every pool is due, beside its floor (a
 * raw loop deleting as many disks, swept over concurrency) — all over all the disks, timed, their
 * list calls counted.
 * @module
 */
import { join } from 'node:path';
import { GROUP, VERSION, VirtualMachinePool, keys } from '../shared/api/index.js';
import type { DiskTemplate } from '../shared/api/index.js';
import { newDisk } from '../shared/domain/index.js';
import { createKube } from '../shared/kube/index.js';
import { createSend } from '../shared/kube/transport.js';
import type { Send } from '../shared/kube/transport.js';
import { runBounded } from '../shared/reconcile/index.js';
import { prepareDeletes, rawDeletes } from './gc-raw.js';
import type { DeletePoint } from './gc-raw.js';
import type { BenchPlane } from './plane.js';
import { benchPool, clients, cpuReading, cpuSince, median, quietBefore } from './objects.js';
import { shippedPasses } from './gc-shipped.js';
import { ROOT } from '../scripts/bundle-options.js';

/** One GC pass. */
export interface GcPass {
  readonly ms: number;
  readonly lists: number;
  readonly deleted: number;
  readonly requests: Record<string, number>;
  /** CPU the pass's process spent in it (parsing, planning, logging): the rest is waiting. */
  readonly cpuMs: number;
  /** CPU the kube-apiserver and etcd spent meanwhile (serving the lists, taking the writes). */
  readonly serverCpuMs: { readonly apiserver: number; readonly etcd: number };
  /** List requests the pass's lists may need for what they returned: 1 per page of pools, ⌊n/500⌋ + 1 per list of n. */
  readonly expectedLists: number;
  /** From its first delete sent to its last write answered, ms (0: nothing written). */
  readonly writeMs: number;
}

/** The floor of a pass: the same objects listed bare (pages of 500, bodies read, nothing parsed). */
export interface GcFloor {
  readonly ms: number;
  readonly pages: number;
  readonly bytes: number;
  /** CPU this process spent (TLS, reading the bodies), to set beside the pass's. */
  readonly cpuMs: number;
  /** CPU the kube-apiserver and etcd spent meanwhile. */
  readonly serverCpuMs: { readonly apiserver: number; readonly etcd: number };
}

/** The setup and both passes. */
export interface GcResult {
  readonly pools: number;
  readonly disks: number;
  /** Namespaces the pools are spread over, round robin. */
  readonly namespaces: number;
  readonly setupMs: number;
  /** Deleting the benchmark's namespace afterwards, so later benchmarks see a cluster without it. */
  readonly cleanupMs: number;
  /** A pass with nothing due (the median of {@link ROUNDS}, alternating with the floor). */
  readonly quiet: GcPass;
  /** The floor beside it (the median of as many rounds). */
  readonly floor: GcFloor;
  /** A pass with the clock two hours later: one disk per pool due. */
  readonly due: GcPass;
  /** Its floor: as many disks deleted by a raw loop, at each concurrency of the sweep. */
  readonly raw: DeletePoint[];
}

/** Rounds of (floor, pass with nothing due), alternating, of which the medians are reported. */
const ROUNDS = 3;

const POOLS_PATH = `/apis/${GROUP}/${VERSION}/virtualmachinepools`;
const DISKS_PATH = '/apis/virtualization.deckhouse.io/v1alpha2/virtualdisks';

/** The processes whose CPU a pass and its floor are charged: kube-apiserver and etcd. */
type Servers = Readonly<Record<'apiserver' | 'etcd', readonly number[]>>;

/**
 * The floor: the disks and pools a pass with nothing due reads (it reads VMs only where a disk is
 * due), listed across the cluster in pages of 500 with one connection, each body read whole and only
 * its continue token looked for (no JSON parse).
 */
async function bareLists(send: Send, servers: Servers): Promise<GcFloor> {
  const server0 = cpuReading(servers);
  const cpu0 = process.cpuUsage();
  const s = performance.now();
  let pages = 0;
  let bytes = 0;
  const selector = `labelSelector=${encodeURIComponent(keys.poolUid)}&`;
  for (const [path, q] of [
    [DISKS_PATH, selector],
    [POOLS_PATH, ''],
  ] as const) {
    let cont: string | undefined;
    do {
      const c = cont === undefined ? '' : `&continue=${encodeURIComponent(cont)}`;
      const a = await send({ method: 'GET', path: `${path}?${q}limit=500${c}` });
      if (a.status >= 300) throw new Error(`floor list ${path}: ${a.status}`);
      pages++;
      bytes += a.text.length;
      // The list's metadata comes after its items: the token is near the end of the body.
      cont = /"continue":"([^"]+)"/.exec(a.text.slice(-2000))?.[1];
    } while (cont !== undefined);
  }
  const ms = performance.now() - s;
  const cpu = process.cpuUsage(cpu0);
  const server = cpuSince(server0, cpuReading(servers));
  return {
    ms,
    pages,
    bytes,
    cpuMs: (cpu.user + cpu.system) / 1000,
    serverCpuMs: { apiserver: server.apiserver ?? 0, etcd: server.etcd ?? 0 },
  };
}

/** The bench pool whose Retain template keeps `disksPerPool - 1` free disks warm: one is due per pool. */
function gcPool(ns: string, name: string, disksPerPool: number) {
  const p = benchPool(ns, name, 0);
  for (const t of p.spec.virtualDiskTemplates)
    if (t.reclaim.ttl !== undefined) t.reclaim = { ...t.reclaim, keep: disksPerPool - 1 };
  return p;
}

/**
 * Creates the pools and disks, in one namespace or spread round robin over `namespaces` (a pass
 * plans a namespace as its lists pass it: with one, it reads all before its first delete), then
 * runs the passes.
 */
export async function gcTick(
  plane: BenchPlane,
  pools: number,
  disksPerPool: number,
  log: (l: string) => void = () => undefined,
  namespaces = 1,
): Promise<GcResult> {
  const spaces = Array.from({ length: namespaces }, (_, k) =>
    namespaces === 1 ? 'bench-gc' : `bench-gc-ns${String(k)}`,
  );
  const nsOf = (i: number): string => spaces[i % spaces.length] ?? 'bench-gc';
  const c = clients(plane.kc);
  for (const ns of spaces) await c.namespace(ns);
  const setup = createKube(plane.kc);
  const t0 = performance.now();
  const created = await runBounded(
    Array.from({ length: pools }, (_, i) => i),
    64,
    async (i) =>
      VirtualMachinePool.parse(await c.createPool(gcPool(nsOf(i), `p${i}`, disksPerPool))),
  );
  const hour = 3600_000;
  const now = Date.now();
  const disks = created.flatMap((pool, i) => {
    const t = pool.spec.virtualDiskTemplates.find((x) => x.name === 'cache') as DiskTemplate;
    return Array.from({ length: disksPerPool }, (_, j) => {
      const d = newDisk(pool, t, `p${i}-cache-${j}`, {
        kind: 'VirtualMachinePool',
        name: pool.metadata.name ?? '',
        uid: pool.metadata.uid ?? '',
      });
      // Freed 10 to 13 minutes ago: within the template's ttl (30m) now, beyond it two hours later.
      const freed = new Date(now - 10 * 60_000 - j * 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
      return { ...d, metadata: { ...d.metadata, annotations: { [keys.freeSince]: freed } } };
    });
  });
  await runBounded(disks, 64, async (d) => {
    const o = await setup.createDisk(d.metadata.namespace ?? '', d);
    if (!o.ok) throw new Error(o.message);
  });
  const setupMs = performance.now() - t0;
  const servers: Servers = {
    apiserver: [plane.cp.pids['kube-apiserver'] ?? 0],
    etcd: [plane.cp.pids.etcd ?? 0],
  };
  // Every pass in one process started as the image starts disk-gc-tick (gc-shipped.ts), on one
  // funnel: one warm connection, as the floor keeps.
  const shipped = await shippedPasses(
    plane.cp.kubeconfigPath,
    join(ROOT, 'bench-results', 'build'),
  );
  const pass = async (at: Date): Promise<GcPass> => {
    const server0 = cpuReading(servers);
    const figures = await shipped.pass(at);
    const server = cpuSince(server0, cpuReading(servers));
    return {
      ...figures,
      serverCpuMs: { apiserver: server.apiserver ?? 0, etcd: server.etcd ?? 0 },
    };
  };
  // The tick as it usually runs: nothing due. Then the GC's clock two hours on: one disk per pool is
  // due (the oldest beyond keep), over the same disks.
  const send = createSend(plane.kc);
  const floors: GcFloor[] = [];
  const quiets: GcPass[] = [];
  // Each timed pass starts on a quiet control plane, as scale-up's windows do: a collector still
  // reading owners after the creates would load whichever came first (in the run measured after this
  // change every wait ended after its first two quiet seconds: the pools exist before their disks).
  const quiet = (before: string): Promise<void> =>
    quietBefore(
      plane.planePids(),
      (l) => {
        log(`disk-gc-tick: ${l}`);
      },
      before,
    );
  const middle = <T extends { ms: number }>(xs: T[]): T => {
    const m = median(xs.map((x) => x.ms));
    return xs.find((x) => x.ms === m) ?? (xs[0] as T);
  };
  let due: GcPass;
  let sets: Awaited<ReturnType<typeof prepareDeletes>>;
  try {
    for (let r = 0; r < ROUNDS; r++) {
      await quiet(`floor ${r + 1}`);
      floors.push(await bareLists(send, servers));
      await quiet(`pass ${r + 1}`);
      quiets.push(await pass(new Date()));
    }
    // The due pass's floor deletes as many disks of the same shape (one per pool), in namespaces the
    // pass does not read, created before the pass so that their creation does not load it.
    sets = await prepareDeletes(
      plane,
      disks.filter((_, i) => i % disksPerPool === 0),
    );
    await quiet('the due pass');
    due = await pass(new Date(Date.now() + 2 * hour));
  } finally {
    shipped.stop();
  }
  await quiet('the raw delete loop');
  const raw = await rawDeletes(plane, sets);
  // The pools were never reconciled: left in place, a later resync tick (the bounded-memory
  // benchmark's) would reconcile every one of them instead of measuring a quiet tick (the recorded
  // run at d29216e failed in that tick, 'fetch failed', after building its 10,000 pools).
  const t = performance.now();
  await Promise.all(spaces.map((ns) => c.dropNamespace(ns)));
  const cleanupMs = performance.now() - t;
  return {
    cleanupMs,
    pools,
    disks: disks.length,
    namespaces,
    setupMs,
    quiet: middle(quiets),
    floor: middle(floors),
    due,
    raw,
  };
}

/** The pool count the absolute goal of a due pass (≤ 2 s) was set for: 2,000 disks, 500 due. */
export const DUE_GOAL_POOLS = 500;

/**
 * The due pass's time is judged against 2 s only at the size that goal was set for. Above it the
 * raw delete loop alone takes longer than 2 s, so the pass is judged by its write rate against that
 * loop's (the row after the floor) and its time is context.
 */
export function dueGoal(gc: { readonly pools: number; readonly due: Pick<GcPass, 'ms'> }): {
  goal: string;
  pass?: boolean;
} {
  return gc.pools <= DUE_GOAL_POOLS
    ? { goal: '≤ 2 s', pass: gc.due.ms <= 2000 }
    : {
        goal: `context: ≤ 2 s is the goal at ${String(DUE_GOAL_POOLS)} pools (--quick); at ${String(gc.pools)}, the write rate against the raw loop's below`,
      };
}
