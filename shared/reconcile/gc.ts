/**
 * One disk-GC pass over the whole cluster: every pool and every pool-labelled disk, each listed once
 * page by page and kept as GC facts; namespace by namespace as the lists pass it, every VM of the
 * namespace where a disk is due, then preconditioned deletes.
 * @module
 */
import type { Logger } from 'pino';
import type { Malformed, VirtualMachine } from '../api/index.js';
import type { Collect, GcPool } from '../domain/index.js';
import {
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
import { GC_PARALLEL, PARALLEL, sharedBound } from './batch.js';
import { bestEffort } from './event-log.js';
import type { NamespaceFacts } from './gc-stream.js';
import { streamFacts } from './gc-stream.js';

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

/** What a pass did in one namespace. */
interface Tally {
  readonly deleted: Collect[];
  readonly skipped: number;
  readonly nextWakeMs: number | undefined;
}

const diskKey = (d: { metadata: { namespace?: string; name?: string } }): string =>
  `${d.metadata.namespace ?? ''}/${d.metadata.name ?? ''}`;

/**
 * A pass lists every pool and every pool-labelled disk once, page by page, and keeps of them only
 * GC facts (domain/disks/gc-facts.ts): the pools that may collect and the disks that are free, a
 * few hundred bytes each, whatever the cluster's size. A namespace is planned as soon as both lists
 * are past it (`streamFacts`), so its deletes go out while the lists read on: in a cluster of many
 * namespaces the reads of a pass with much to delete no longer all come before its first write.
 * Its disks are listed before any of its VMs: a disk claimed or stamped after that list changes its
 * resourceVersion, so the preconditioned delete of the old one fails; bindings and references made
 * before it are seen by the VM list that follows. A namespace none of whose disks is due reads no
 * VM; one where a disk would go reads every VM of the namespace, a pool's or not, and plans again,
 * so a VM outside every pool keeps what it references (L3). A failed list or VM read fails the pass
 * (it is retried) once what was under way is done; the namespaces planned before it keep what they
 * deleted, each delete decided from that namespace's whole facts.
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
  const reads = sharedBound(PARALLEL);
  const deleter = deleterOf(kube, log);
  const passes: Promise<Outcome<Tally>>[] = [];
  const listed = await streamFacts(kube, limit, (namespace, facts) =>
    passes.push(collectIn(namespace, facts, { kube, now, log, reads, deleter })),
  );
  const tallies = await Promise.all(passes);
  const denied = await deleter.settled();
  if (listed !== undefined) return failed(listed);
  const deleted: Collect[] = [];
  let skipped = 0;
  let nextWakeMs: number | undefined;
  for (const t of tallies) {
    if (!t.ok) return failed(t);
    deleted.push(...t.value.deleted);
    skipped += t.value.skipped;
    if (t.value.nextWakeMs !== undefined)
      nextWakeMs = Math.min(nextWakeMs ?? t.value.nextWakeMs, t.value.nextWakeMs);
  }
  if (denied !== undefined) return failed(denied);
  return { kind: 'done', deleted, skipped, nextWakeMs };
}

/** What planning one namespace needs of its pass. */
interface PassDeps {
  readonly kube: Kube;
  readonly now: Date;
  readonly log: Logger;
  /** The pass's bound on VM lists in flight, across namespaces. */
  readonly reads: <R>(fn: () => Promise<R>) => Promise<R>;
  readonly deleter: Deleter;
}

/** Plans one namespace from its facts, reads its VMs where a disk is due, and deletes. */
async function collectIn(
  namespace: string,
  facts: NamespaceFacts,
  { kube, now, log, reads, deleter }: PassDeps,
): Promise<Outcome<Tally>> {
  const { pools, disks, malformed } = facts;
  // A VM only ever keeps a disk: planned as if no VM held any, the namespace collects a superset of
  // what it would knowing its VMs and wakes no later (planGc's laws). When even that is nothing, no
  // VM can make it something, and the namespace reads none: the usual pass, nothing due, reads
  // pools and disks only.
  const unheld = planGc(pools, [], disks, now);
  if (unheld.collect.length === 0)
    return { ok: true, value: { deleted: [], skipped: 0, nextWakeMs: unheld.nextWakeMs } };
  // An empty selector: every VM of the namespace, a pool's or not, a page at a time, keeping of each
  // only the disks it names and its pool label.
  const read = await reads(() => holdersIn(kube, namespace));
  if (!read.ok) return read;
  const vms = read.value;
  const skipped = read.malformed ?? [];
  // A pool an unparseable VM or disk claims keeps its disks this pass: that VM may reference them,
  // as may one whose references cannot be read (its whole namespace); named ones are in use.
  const unseen = malformedByPool([...skipped, ...malformed], vms);
  const held = heldByMalformed(skipped);
  const due = new Set(unheld.collect.map((c) => c.pool));
  const collectable = pools.filter((p) => {
    const claims = unseen.get(poolKey(p)) ?? held.namespaces.get(namespace);
    if (claims !== undefined && due.has(nameOf(p)))
      log.warn({ pool: `${namespace}/${nameOf(p)}` }, malformedMessage(claims));
    return claims === undefined;
  });
  const gc = planGc(
    collectable,
    vms,
    disks.filter((d) => !held.disks.has(diskKey(d))),
    now,
  );
  const deleted = await deleter.all(gc.collect, pools);
  return {
    ok: true,
    value: { deleted, skipped: gc.collect.length - deleted.length, nextWakeMs: gc.nextWakeMs },
  };
}

/** A pass's deletes, bounded together across its namespaces. */
interface Deleter {
  /** Deletes what a plan collects; gives those deleted. */
  all(collect: readonly Collect[], pools: readonly GcPool[]): Promise<Collect[]>;
  /** Once every Event recorded is done: the first refused grant among the deletes, if any. */
  settled(): Promise<Failure | undefined>;
}

/**
 * Deletes what plans collect, each under the uid and resourceVersion it was planned from, and
 * records a DiskCollected Event on its pool. The deletes of every namespace of the pass share
 * {@link GC_PARALLEL} slots, the Events as many of their own: a delete's slot is free once the
 * delete is answered, so the Events do not halve the pass's delete rate. A refused grant fails the
 * pass once all are done.
 */
function deleterOf(kube: Kube, log: Logger): Deleter {
  let denied: Failure | undefined;
  const deletes = sharedBound(GC_PARALLEL);
  const events = sharedBound(GC_PARALLEL);
  const recorded: Promise<void>[] = [];
  const collectOne = async (c: Collect, pool: GcPool | undefined): Promise<boolean> => {
    const pre = { uid: c.uid, resourceVersion: c.resourceVersion };
    const o = await deletes(() => kube.deleteDisk(c.namespace, c.name, pre));
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
    return o.ok;
  };
  return {
    async all(collect, pools) {
      const poolOf = new Map(pools.map((p) => [nameOf(p), p]));
      const done = await Promise.all(collect.map((c) => collectOne(c, poolOf.get(c.pool))));
      return collect.filter((_, i) => done[i]);
    },
    async settled() {
      // Nothing of the pass writes after it answered.
      await Promise.all(recorded);
      return denied;
    },
  };
}
