/**
 * Benchmark 4c's disk-GC passes, run as disk-gc-tick runs them: this file is bundled with the
 * functions' esbuild options and started with the image's flags and environment
 * (`scripts/image-start.ts`), so a pass pays for the image's 1 MiB young generation, not for the
 * bench process's 16 MiB, and for the function's logger at `info`, not for a silent one. The
 * bench process writes one line per pass to its stdin (the GC's clock, ISO 8601) and reads one
 * line of figures per pass from fd 3 (after a first line saying the connection is made); stdout
 * carries the function's own log lines.
 * @module
 */
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../shared/http/log.js';
import { createKube, loadCredentials } from '../shared/kube/index.js';
import type { Kube, Listed, PageRequest } from '../shared/kube/index.js';
import { collectDisks } from '../shared/reconcile/index.js';

/** What one pass reports: the bench adds the API server's and etcd's CPU around it. */
export interface PassFigures {
  readonly ms: number;
  readonly lists: number;
  readonly deleted: number;
  readonly requests: Record<string, number>;
  /** CPU of this process during the pass (parsing, planning, the writes' requests, logging). */
  readonly cpuMs: number;
  /** List requests the pass's lists may need for what they returned (see `GcPass.expectedLists`). */
  readonly expectedLists: number;
  /**
   * From the first delete sent to the last write answered (a delete or its Event), ms; 0 when the
   * pass wrote nothing. The rest of the pass is its reads and plans.
   */
  readonly writeMs: number;
}

/**
 * One pass of `collectDisks` on `funnel` with the clock at `at`, its list requests counted against
 * what the lists returned: a list read whole in pages of k may end with an empty page (⌊n/k⌋ + 1
 * requests), a page asked for alone is one.
 */
export async function timedPass(funnel: Kube, at: Date): Promise<PassFigures> {
  const before = funnel.counts();
  let expectedLists = 0;
  const counted =
    <T>(list: (ns: string | undefined, sel: string, page?: PageRequest) => Promise<Listed<T>>) =>
    async (ns: string | undefined, sel: string, page?: PageRequest): Promise<Listed<T>> => {
      const r = await list(ns, sel, page);
      const whole = page === undefined || page.all === true;
      const k = page?.limit ?? 500;
      if (r.ok) expectedLists += whole ? Math.floor(r.value.length / k) + 1 : 1;
      return r;
    };
  let firstWrite: number | undefined;
  let lastAnswer = 0;
  const timed =
    <A extends unknown[], R>(write: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      firstWrite ??= performance.now();
      try {
        return await write(...a);
      } finally {
        lastAnswer = performance.now();
      }
    };
  const kube: Kube = {
    ...funnel,
    deleteDisk: timed((ns: string, name: string, pre) => funnel.deleteDisk(ns, name, pre)),
    recordEvent: timed((on, event) => funnel.recordEvent(on, event)),
    listDisks: counted((ns, sel, page) => funnel.listDisks(ns, sel, page)),
    listPools: async (ns?: string, page?: PageRequest) => {
      const r = await funnel.listPools(ns, page);
      if (r.ok) expectedLists++;
      return r;
    },
    listVms: counted((ns, sel, page) => funnel.listVms(ns, sel, page)),
  };
  const log = createLogger('disk-gc-tick');
  const s = performance.now();
  const cpu0 = process.cpuUsage();
  const out = await collectDisks(kube, at, log);
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - s;
  if (out.kind !== 'done') throw new Error(`GC pass: ${out.reason}`);
  const requests = Object.fromEntries(
    Object.entries(funnel.counts())
      .filter(([k]) => !k.includes(':'))
      .map(([k, v]) => [k, v - (before[k] ?? 0)]),
  );
  return {
    ms,
    lists: requests.list ?? 0,
    deleted: out.deleted.length,
    requests,
    cpuMs: (cpu.user + cpu.system) / 1000,
    expectedLists,
    writeMs: firstWrite === undefined ? 0 : lastAnswer - firstWrite,
  };
}

/** Runs a pass per line of stdin, on one funnel (one warm connection, as the floor keeps). */
async function main(): Promise<void> {
  const funnel = createKube(await loadCredentials());
  // The connection is made before the first pass, as a running function's is.
  const warm = await funnel.listPools(undefined, { limit: 1 });
  if (!warm.ok) throw new Error(`gc-pass: ${warm.message}`);
  writeSync(3, '{"ready":true}\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const figures = await timedPass(funnel, new Date(line.trim()));
    writeSync(3, `${JSON.stringify(figures)}\n`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
