/**
 * Benchmark 4c, disk-gc-tick at scale: pools with N free Retain disks each (keep N−1), freed minutes
 * ago; one GC pass with nothing due, then one with the GC's clock two hours later, when the oldest
 * disk of every pool is due — both over all the disks, timed, their list calls counted.
 * @module
 */
import { VirtualMachinePool, keys } from '../shared/api/index.js';
import type { DiskTemplate } from '../shared/api/index.js';
import { newDisk } from '../shared/domain/index.js';
import { createKube } from '../shared/kube/index.js';
import type { Kube } from '../shared/kube/index.js';
import { collectDisks, runBounded } from '../shared/reconcile/index.js';
import type { BenchPlane } from './plane.js';
import { benchPool, clients, cpuReading, cpuSince } from './objects.js';
import { silentLog } from './stack.js';

/** One GC pass. */
export interface GcPass {
  readonly ms: number;
  readonly lists: number;
  readonly deleted: number;
  readonly requests: Record<string, number>;
  /** CPU this process spent in the pass (parsing, planning): the rest of its time is waiting. */
  readonly cpuMs: number;
  /** CPU the kube-apiserver and etcd spent meanwhile (serving the lists, taking the writes). */
  readonly serverCpuMs: { readonly apiserver: number; readonly etcd: number };
  /** List pages three lists of what the cluster held need at 500 per page (disks, pools, VMs). */
  readonly expectedLists: number;
}

/** The setup and both passes. */
export interface GcResult {
  readonly pools: number;
  readonly disks: number;
  readonly setupMs: number;
  /** A pass with nothing due. */
  readonly quiet: GcPass;
  /** A pass with the clock two hours later: one disk per pool due. */
  readonly due: GcPass;
}

/** The bench pool whose Retain template keeps `disksPerPool - 1` free disks warm: one is due per pool. */
function gcPool(ns: string, name: string, disksPerPool: number) {
  const p = benchPool(ns, name, 0);
  for (const t of p.spec.virtualDiskTemplates)
    if (t.reclaim.ttl !== undefined) t.reclaim = { ...t.reclaim, keep: disksPerPool - 1 };
  return p;
}

/** Creates the pools and disks, then runs two passes. */
export async function gcTick(
  plane: BenchPlane,
  pools: number,
  disksPerPool: number,
): Promise<GcResult> {
  const ns = 'bench-gc';
  const c = clients(plane.kc);
  await c.namespace(ns);
  const setup = createKube(plane.kc);
  const t0 = performance.now();
  const created = await runBounded(
    Array.from({ length: pools }, (_, i) => i),
    64,
    async (i) => VirtualMachinePool.parse(await c.createPool(gcPool(ns, `p${i}`, disksPerPool))),
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
    const o = await setup.createDisk(ns, d);
    if (!o.ok) throw new Error(o.message);
  });
  const setupMs = performance.now() - t0;
  const pass = async (at: Date): Promise<GcPass> => {
    const funnel = createKube(plane.kc);
    // The cluster holds other benchmarks' objects too: count what each list returned.
    const sizes = { disks: 0, pools: 0, vms: 0 };
    const kube: Kube = {
      ...funnel,
      listDisks: async (...a) => {
        const r = await funnel.listDisks(...a);
        if (r.ok) sizes.disks = r.value.length;
        return r;
      },
      listPools: async (...a) => {
        const r = await funnel.listPools(...a);
        if (r.ok) sizes.pools = r.value.length;
        return r;
      },
      listVms: async (...a) => {
        const r = await funnel.listVms(...a);
        if (r.ok) sizes.vms = r.value.length;
        return r;
      },
    };
    const servers = {
      apiserver: [plane.cp.pids['kube-apiserver'] ?? 0],
      etcd: [plane.cp.pids.etcd ?? 0],
    };
    const server0 = cpuReading(servers);
    const s = performance.now();
    const cpu0 = process.cpuUsage();
    const out = await collectDisks(kube, at, silentLog('gc'));
    const cpu = process.cpuUsage(cpu0);
    const ms = performance.now() - s;
    const server = cpuSince(server0, cpuReading(servers));
    if (out.kind !== 'done') throw new Error(`GC pass: ${out.reason}`);
    const requests = Object.fromEntries(
      Object.entries(kube.counts()).filter(([k]) => !k.includes(':')),
    );
    const pages = (n: number) => Math.max(1, Math.ceil(n / 500));
    return {
      ms,
      lists: requests.list ?? 0,
      deleted: out.deleted.length,
      requests,
      cpuMs: (cpu.user + cpu.system) / 1000,
      serverCpuMs: { apiserver: server.apiserver ?? 0, etcd: server.etcd ?? 0 },
      expectedLists: pages(sizes.disks) + pages(sizes.pools) + pages(sizes.vms),
    };
  };
  // The tick as it usually runs: nothing due. Then the GC's clock two hours on: one disk per pool is
  // due (the oldest beyond keep), over the same disks.
  const quiet = await pass(new Date());
  const due = await pass(new Date(Date.now() + 2 * hour));
  return { pools, disks: disks.length, setupMs, quiet, due };
}
