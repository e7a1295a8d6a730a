/**
 * One disk-GC pass over the whole cluster, a window of pools at a time: the window's pools and their
 * disks, then, only where a disk is due, their VMs (and the VMs of the namespaces where a disk would
 * go), then preconditioned deletes.
 * @module
 */
import type { Logger } from 'pino';
import type { Malformed, VirtualMachine, VirtualMachinePool } from '../api/index.js';
import type { Collect } from '../domain/index.js';
import {
  collectNamespaces,
  diskHolder,
  eventFor,
  forbiddenMessage,
  heldByMalformed,
  malformedByPool,
  malformedMessage,
  nameOf,
  planGc,
  poolKey,
} from '../domain/index.js';
import type { Failure, Kube, Listed, Outcome } from '../kube/index.js';
import { GC_PARALLEL, PARALLEL, runBounded, sharedBound } from './batch.js';
import { WINDOW, listAt, placesOf, poolPages } from './window.js';

/** What a GC pass did. */
export type GcOutcome =
  | {
      readonly kind: 'done';
      readonly deleted: Collect[];
      readonly skipped: number;
      readonly nextWakeMs: number | undefined;
    }
  | { readonly kind: 'retry'; readonly reason: string }
  /** disk-gc-tick lacks a grant: retrying the tick would not help; logged with the fix. */
  | { readonly kind: 'forbidden'; readonly reason: string };

/** Every VM of a namespace, page by page, each kept as the disks it holds (`diskHolder`). */
async function holdersIn(kube: Kube, namespace: string): Promise<Listed<VirtualMachine>> {
  const value: VirtualMachine[] = [];
  const malformed: Malformed[] = [];
  let cont: string | undefined;
  do {
    const page = await kube.listVms(namespace, '', cont === undefined ? {} : { continue: cont });
    if (!page.ok) return page;
    for (const vm of page.value) value.push(diskHolder(vm));
    malformed.push(...(page.malformed ?? []));
    cont = page.next;
  } while (cont !== undefined);
  return { ok: true, value, malformed };
}

/** What one window's pass did; the pass adds them up. */
interface WindowGc {
  readonly deleted: Collect[];
  readonly skipped: number;
  readonly nextWakeMs: number | undefined;
}

/**
 * Windows a pass works on at once. While one window's lists are parsed or its disks deleted, the API
 * server already serves the next ones': one window at a time left the server idle during our parse
 * and us idle during its list. Windows share no pool, so no window's reads bear on another's deletes.
 * A pass over 5,000 pools with nothing due, three rounds side by side: 3.29–3.37 s one at a time,
 * 2.75–2.92 s two, 2.44–2.68 s three (its bare-list floor 2.26–2.68 s).
 */
export const GC_WINDOWS_IN_FLIGHT = 3;

/**
 * A pass reads the cluster a window of pools at a time (`window.ts`), so it holds at most
 * {@link GC_WINDOWS_IN_FLIGHT} windows whatever the cluster's size; a window's deletes are done
 * before its result is counted, and the pass answers only once no window is in flight.
 */
export async function collectDisks(
  kube: Kube,
  now: Date,
  log: Logger,
  window = WINDOW,
  windowsInFlight = GC_WINDOWS_IN_FLIGHT,
): Promise<GcOutcome> {
  const refused = (f: Failure): GcOutcome => {
    const reason = forbiddenMessage('disk-gc-tick', f.message);
    log.error({ err: f.message }, `forbidden: ${reason}`);
    return { kind: 'forbidden', reason };
  };
  const failed = (f: Failure): GcOutcome =>
    f.reason === 'forbidden' ? refused(f) : { kind: 'retry', reason: f.message };
  const deleted: Collect[] = [];
  let skipped = 0;
  let nextWakeMs: number | undefined;
  let failure: Failure | undefined;
  // Windows in flight, oldest first; each is counted as it is taken off.
  const inFlight: Promise<Outcome<WindowGc>>[] = [];
  // One bound for the deletes of every window in flight: the pass leans on the API server as hard
  // with three windows as with one.
  const deletes = sharedBound(GC_PARALLEL);
  const settleOldest = async (): Promise<void> => {
    const w = await inFlight.shift();
    if (w === undefined || !w.ok) return;
    deleted.push(...w.value.deleted);
    skipped += w.value.skipped;
    const wake = w.value.nextWakeMs;
    if (wake !== undefined) nextWakeMs = Math.min(nextWakeMs ?? wake, wake);
  };
  for await (const page of poolPages(kube, undefined, window)) {
    if (!page.ok) {
      failure ??= page;
      break;
    }
    if (page.value.length === 0) continue;
    // A failure is known as soon as it happens, so no window starts after it, even while an older
    // window's deletes are still in flight.
    const w = collectWindow(kube, page.value, now, log, deletes).then((o) => {
      if (!o.ok) failure ??= o;
      return o;
    });
    // A window left behind by another's throw (a bug) must not become an unhandled rejection too.
    w.catch(() => undefined);
    inFlight.push(w);
    if (inFlight.length >= windowsInFlight) await settleOldest();
    if (failure !== undefined) break;
  }
  // A failed window stops the pass, but not before the window beside it is done: nothing of this
  // pass writes after it answered.
  while (inFlight.length > 0) await settleOldest();
  if (failure !== undefined) return failed(failure);
  return { kind: 'done', deleted, skipped, nextWakeMs };
}

/**
 * One window. Its disks are listed first: a disk claimed or stamped after that list changes its
 * resourceVersion, so the preconditioned delete of the old one fails; bindings and references made
 * before it are seen by the VM list that follows. A window none of whose disks is due reads no VMs;
 * one that would delete something reads its pools' VMs, then every VM of those disks' namespaces,
 * and plans again, so a VM outside every pool keeps what it references (L3).
 */
async function collectWindow(
  kube: Kube,
  pools: readonly VirtualMachinePool[],
  now: Date,
  log: Logger,
  bound: <R>(fn: () => Promise<R>) => Promise<R>,
): Promise<Outcome<WindowGc>> {
  const places = placesOf(pools);
  const disks = await listAt(places, (ns, sel, page) => kube.listDisks(ns, sel, page));
  if (!disks.ok) return disks;
  // A VM only ever keeps a disk: planned as if no VM held any, the window collects a superset of
  // what it would knowing its VMs and wakes no later (planGc's laws). When even that is nothing, no
  // VM can make it something, and the window reads none: the usual pass, nothing due, reads pools
  // and disks only. A window with an unparseable disk goes on, so the pass still says which pool
  // that disk holds back (below).
  const unheld = planGc(pools, [], disks.value, now);
  if (unheld.collect.length === 0 && (disks.malformed ?? []).length === 0)
    return { ok: true, value: { deleted: [], skipped: 0, nextWakeMs: unheld.nextWakeMs } };
  const vms = await listAt(places, (ns, sel, page) => kube.listVms(ns, sel, page));
  if (!vms.ok) return vms;
  // A pool an unparseable VM or disk claims keeps its disks this pass: that VM may reference them,
  // as may one whose references cannot be read (its whole namespace); named ones are in use.
  const unseen = malformedByPool([...(vms.malformed ?? []), ...(disks.malformed ?? [])], vms.value);
  const held = heldByMalformed(vms.malformed ?? []);
  const collectable = pools.filter((p) => {
    const ns = p.metadata.namespace ?? '';
    const claims = unseen.get(poolKey(p)) ?? held.namespaces.get(ns);
    if (claims !== undefined) log.warn({ pool: `${ns}/${nameOf(p)}` }, malformedMessage(claims));
    return claims === undefined;
  });
  const diskKey = (d: { metadata: { namespace?: string; name?: string } }): string =>
    `${d.metadata.namespace ?? ''}/${d.metadata.name ?? ''}`;
  const free = disks.value.filter((d) => !held.disks.has(diskKey(d)));
  let gc = planGc(collectable, vms.value, free, now);
  const namespaces = collectNamespaces(gc);
  if (namespaces.length > 0) {
    // An empty selector: every VM of the namespace, a pool's or not, a page at a time, keeping of
    // each only the disks it names (a namespace may hold far more VMs than a window).
    const all = await runBounded(namespaces, PARALLEL, (ns) => holdersIn(kube, ns));
    const everyVm: VirtualMachine[] = [];
    const skipped = [];
    for (const l of all) {
      if (!l.ok) return l;
      everyVm.push(...l.value);
      skipped.push(...(l.malformed ?? []));
    }
    // A VM outside the pools that does not parse holds what it names, or its whole namespace.
    const more = heldByMalformed(skipped);
    gc = planGc(
      collectable.filter((p) => !more.namespaces.has(p.metadata.namespace ?? '')),
      [...vms.value, ...everyVm],
      free.filter((d) => !more.disks.has(diskKey(d))),
      now,
    );
  }
  let denied: Failure | undefined;
  const poolOf = new Map(pools.map((p) => [`${p.metadata.namespace ?? ''}/${nameOf(p)}`, p]));
  const collectOne = async (c: Collect): Promise<Collect | undefined> => {
    const pre = { uid: c.uid, resourceVersion: c.resourceVersion };
    const o = await kube.deleteDisk(c.namespace, c.name, pre);
    const pool = poolOf.get(`${c.namespace}/${c.pool}`);
    const event = eventFor({ kind: 'deleteDisk', name: c.name, ...pre, why: 'gc' }, o.ok);
    // Best effort, like every Event: a refused one changes nothing about the pass.
    if (pool !== undefined && event !== undefined) await kube.recordEvent(pool, event);
    if (o.ok)
      log.info(
        {
          disk: `${c.namespace}/${c.name}`,
          pool: c.pool,
          freeForSeconds: Math.round(c.freeForMs / 1000),
        },
        'collected free disk',
      );
    if (!o.ok && o.reason === 'forbidden') denied ??= o;
    return o.ok ? c : undefined;
  };
  // The pass's one bound holds these deletes and those of every other window in flight.
  const results = await Promise.all(gc.collect.map((c) => bound(() => collectOne(c))));
  if (denied !== undefined) return denied;
  const deleted = results.filter((c): c is Collect => c !== undefined);
  return {
    ok: true,
    value: { deleted, skipped: gc.collect.length - deleted.length, nextWakeMs: gc.nextWakeMs },
  };
}
