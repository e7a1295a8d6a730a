/**
 * One disk-GC pass over the whole cluster: every pool and every pool-labelled disk, each listed once
 * page by page and kept as GC facts; then, only where a disk is due, every VM of its namespace; then
 * preconditioned deletes.
 * @module
 */
import type { Logger } from 'pino';
import type { Malformed, VirtualDisk, VirtualMachine } from '../api/index.js';
import { keys } from '../api/index.js';
import type { Collect, GcPool } from '../domain/index.js';
import {
  collectNamespaces,
  diskHolder,
  eventFor,
  forbiddenMessage,
  freeCandidate,
  gcDisk,
  gcPool,
  heldByMalformed,
  malformedByPool,
  malformedMessage,
  mayCollect,
  nameOf,
  planGc,
  poolKey,
} from '../domain/index.js';
import type { Failure, Kube, Listed, Outcome, PageRequest } from '../kube/index.js';
import { GC_PARALLEL, PARALLEL, runBounded, sharedBound } from './batch.js';
import { pagesOf } from './window.js';
import { bestEffort } from './event-log.js';

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
    const page = await kube.listVms(namespace, '', {
      lean: true,
      ...(cont === undefined ? {} : { continue: cont }),
    });
    if (!page.ok) return page;
    for (const vm of page.value) value.push(diskHolder(vm));
    malformed.push(...(page.malformed ?? []));
    cont = page.next;
  } while (cont !== undefined);
  return { ok: true, value, malformed };
}

/**
 * Items per page of the pass's two lists. The pass keeps only facts of what it reads, so a page is
 * the most it holds whole; 500 is the funnel's page and the floor's the bench sets it beside.
 */
export const GC_PAGE = 500;

/** What a pass keeps of the cluster: the facts of its pools and free disks, by uid. */
interface Facts {
  readonly pools: GcPool[];
  readonly disks: VirtualDisk[];
  /** Pool-labelled disks that do not parse: each holds back the pools it claims. */
  readonly malformed: Malformed[];
}

/**
 * Every pool that may collect and every free pool disk of the cluster, listed side by side, page by
 * page, lean (the pass keeps facts, never the objects). A list restarted after an expired token
 * starts its facts afresh ({@link keep}).
 */
async function factsOf(kube: Kube, limit: number): Promise<Outcome<Facts>> {
  const pools = new Map<string, GcPool>();
  const disks = new Map<string, VirtualDisk>();
  const malformed = new Map<string, Malformed>();
  // Existence, not `in (<uids>)`: the API server tests a set requirement value by value, against
  // every disk, for every list that names uids (1.2 s of its CPU in a 5,000-pool pass when it did).
  const failed = (
    await Promise.all([
      keep(
        (p) => kube.listPools(undefined, { ...p, lean: true }),
        limit,
        pools,
        (p) => (mayCollect(p) ? gcPool(p) : undefined),
      ),
      keep(
        (p) => kube.listDisks(undefined, keys.poolUid, { ...p, lean: true }),
        limit,
        disks,
        (d) => (freeCandidate(d) ? gcDisk(d) : undefined),
        malformed,
      ),
    ])
  ).find((f) => f !== undefined);
  if (failed !== undefined) return failed;
  return {
    ok: true,
    value: {
      pools: [...pools.values()],
      disks: [...disks.values()],
      malformed: [...malformed.values()],
    },
  };
}

/**
 * Reads a list page by page into `into`, by uid, the facts `fact` gives of each item (none: the
 * item is not kept), and into `malformed` what does not parse.
 * A list restarted after an expired token reads every object again: what was kept before is
 * forgotten, so an object deleted in between is not kept from its old read.
 */
async function keep<T extends { metadata: { uid?: string | undefined } }, F>(
  read: (page: PageRequest) => Promise<Listed<T>>,
  limit: number,
  into: Map<string, F>,
  fact: (item: T) => F | undefined,
  malformed?: Map<string, Malformed>,
): Promise<Failure | undefined> {
  const restarted = (): void => {
    into.clear();
    malformed?.clear();
  };
  for await (const page of pagesOf(read, limit, restarted)) {
    if (!page.ok) return page;
    for (const item of page.value) {
      const f = fact(item);
      if (f !== undefined) into.set(item.metadata.uid ?? '', f);
    }
    for (const m of page.malformed ?? []) malformed?.set(m.uid, m);
  }
  return undefined;
}

const diskKey = (d: { metadata: { namespace?: string; name?: string } }): string =>
  `${d.metadata.namespace ?? ''}/${d.metadata.name ?? ''}`;

/**
 * A pass lists every pool and every pool-labelled disk once, page by page, and keeps of them only
 * GC facts (`gc-facts.ts`): the pools that may collect and the disks that are free, a few hundred
 * bytes each, whatever the cluster's size. Its disks are listed before any VM: a disk claimed or
 * stamped after that list changes its resourceVersion, so the preconditioned delete of the old one
 * fails; bindings and references made before it are seen by the VM lists that follow. A pass none
 * of whose disks is due reads no VM; one that would delete something reads every VM of those disks'
 * namespaces, a pool's or not, and plans again, so a VM outside every pool keeps what it references
 * (L3).
 */
export async function collectDisks(
  kube: Kube,
  now: Date,
  log: Logger,
  limit = GC_PAGE,
): Promise<GcOutcome> {
  const refused = (f: Failure): GcOutcome => {
    const reason = forbiddenMessage('disk-gc-tick', f.message);
    log.error({ err: f.message }, `forbidden: ${reason}`);
    return { kind: 'forbidden', reason };
  };
  const failed = (f: Failure): GcOutcome =>
    f.reason === 'forbidden' ? refused(f) : { kind: 'retry', reason: f.message };
  const facts = await factsOf(kube, limit);
  if (!facts.ok) return failed(facts);
  const { pools, disks, malformed } = facts.value;
  // A VM only ever keeps a disk: planned as if no VM held any, the pass collects a superset of what
  // it would knowing its VMs and wakes no later (planGc's laws). When even that is nothing, no VM
  // can make it something, and the pass reads none: the usual pass, nothing due, reads pools and
  // disks only.
  const unheld = planGc(pools, [], disks, now);
  if (unheld.collect.length === 0) return done([], 0, unheld.nextWakeMs);
  // An empty selector: every VM of the namespace, a pool's or not, a page at a time, keeping of each
  // only the disks it names and its pool label.
  const read = await runBounded(collectNamespaces(unheld), PARALLEL, (ns) => holdersIn(kube, ns));
  const vms: VirtualMachine[] = [];
  const skipped: Malformed[] = [];
  for (const l of read) {
    if (!l.ok) return failed(l);
    vms.push(...l.value);
    skipped.push(...(l.malformed ?? []));
  }
  // A pool an unparseable VM or disk claims keeps its disks this pass: that VM may reference them,
  // as may one whose references cannot be read (its whole namespace); named ones are in use.
  const unseen = malformedByPool([...skipped, ...malformed], vms);
  const held = heldByMalformed(skipped);
  const due = new Set(unheld.collect.map((c) => `${c.namespace}/${c.pool}`));
  const collectable = pools.filter((p) => {
    const ns = p.metadata.namespace ?? '';
    const claims = unseen.get(poolKey(p)) ?? held.namespaces.get(ns);
    if (claims !== undefined && due.has(`${ns}/${nameOf(p)}`))
      log.warn({ pool: `${ns}/${nameOf(p)}` }, malformedMessage(claims));
    return claims === undefined;
  });
  const gc = planGc(
    collectable,
    vms,
    disks.filter((d) => !held.disks.has(diskKey(d))),
    now,
  );
  const out = await deleteAll(kube, gc.collect, pools, log);
  if (!out.ok) return failed(out);
  return done(out.value, gc.collect.length - out.value.length, gc.nextWakeMs);
}

const done = (deleted: Collect[], skipped: number, nextWakeMs: number | undefined): GcOutcome => ({
  kind: 'done',
  deleted,
  skipped,
  nextWakeMs,
});

/**
 * Deletes what a plan collects, each under the uid and resourceVersion it was planned from, and
 * records a DiskCollected Event on its pool. The deletes are bounded by {@link GC_PARALLEL}, the
 * Events by as many again of their own: a delete's slot is free once the delete is answered, so
 * the Events do not halve the pass's delete rate. A refused grant fails the pass once all are done.
 */
async function deleteAll(
  kube: Kube,
  collect: readonly Collect[],
  pools: readonly GcPool[],
  log: Logger,
): Promise<Outcome<Collect[]>> {
  let denied: Failure | undefined;
  const poolOf = new Map(pools.map((p) => [`${p.metadata.namespace ?? ''}/${nameOf(p)}`, p]));
  const events = sharedBound(GC_PARALLEL);
  const recorded: Promise<void>[] = [];
  const collectOne = async (c: Collect): Promise<Collect | undefined> => {
    const pre = { uid: c.uid, resourceVersion: c.resourceVersion };
    const o = await kube.deleteDisk(c.namespace, c.name, pre);
    const pool = poolOf.get(`${c.namespace}/${c.pool}`);
    const event = eventFor({ kind: 'deleteDisk', name: c.name, ...pre, why: 'gc' }, o.ok);
    // Best effort, like every Event: a refused one changes nothing about the pass.
    if (pool !== undefined && event !== undefined)
      recorded.push(
        bestEffort(
          events(() => kube.recordEvent(pool, event)),
          log,
          event.reason,
        ),
      );
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
  const results = await runBounded(collect, GC_PARALLEL, collectOne);
  // Nothing of the pass writes after it answered.
  await Promise.all(recorded);
  if (denied !== undefined) return denied;
  return { ok: true, value: results.filter((c): c is Collect => c !== undefined) };
}
