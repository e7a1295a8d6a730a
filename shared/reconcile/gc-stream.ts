/**
 * A disk-GC pass's two lists, every pool and every pool-labelled disk of the cluster, read side by
 * side page by page, and handed over namespace by namespace as soon as both lists are past it: the
 * pass plans and deletes in one namespace while the lists go on through the next ones.
 * @module
 */
import type { Malformed, VirtualDisk } from '../api/index.js';
import { keys } from '../api/index.js';
import type { GcPool } from '../domain/index.js';
import { freeCandidate, gcDisk, gcPool, mayCollect } from '../domain/index.js';
import type { Failure, Kube, Listed, PageRequest } from '../kube/index.js';
import { pagesOf } from './window.js';

/** What a pass keeps of one namespace: its pools that may collect, free disks, unreadable disks. */
export interface NamespaceFacts {
  readonly pools: GcPool[];
  readonly disks: VirtualDisk[];
  /** Pool-labelled disks that do not parse: each holds back the pools it claims. */
  readonly malformed: Malformed[];
}

type List = 'pools' | 'disks';

/**
 * Where a namespace's objects sort in a list. The API server stores an object under
 * `…/<namespace>/<name>` and gives a list in the order of those keys (a continue token is the last
 * key given, and the next page starts after it). With the slash, a namespace that is a prefix of
 * another sorts as its keys do (`a-b/…` before `a/…`).
 */
const sortKey = (namespace: string): string => `${namespace}/`;

/** A list not under way yet or restarted: nothing of it is known to be read whole. */
const START = '';

/**
 * Reads every pool and every pool-labelled disk, lean, `limit` a page, and calls `complete` once
 * for each namespace where a pool may collect or a disk is free, with its facts, once both lists
 * are past it (in the API server's key order), or at the end. A list seen out of that order hands
 * over nothing more until both lists end. A failed list hands over nothing more; what was handed
 * over stays so. A list restarted after an expired token forgets what it gave of the namespaces
 * not handed over yet, and what it gives again of those handed over is ignored.
 */
export async function streamFacts(
  kube: Kube,
  limit: number,
  complete: (namespace: string, facts: NamespaceFacts) => void,
): Promise<Failure | undefined> {
  const open = new Map<string, NamespaceFacts>();
  const given = new Set<string>();
  // The sort key of the last namespace each list gave; undefined once the list ended.
  const reached: Record<List, string | undefined> = { pools: START, disks: START };
  let ordered = true;
  let failed = false;
  const factsOf = (namespace: string): NamespaceFacts | undefined => {
    if (given.has(namespace)) return undefined;
    let facts = open.get(namespace);
    if (facts === undefined) open.set(namespace, (facts = { pools: [], disks: [], malformed: [] }));
    return facts;
  };
  const handOver = (): void => {
    if (failed) return;
    const ends = [reached.pools, reached.disks].filter((r): r is string => r !== undefined);
    if (ends.length > 0 && !ordered) return;
    const bound = ends.length === 0 ? undefined : ends.reduce((a, b) => (a < b ? a : b));
    for (const [namespace, facts] of open) {
      if (bound !== undefined && sortKey(namespace) >= bound) continue;
      open.delete(namespace);
      given.add(namespace);
      complete(namespace, facts);
    }
  };
  const restart = (list: List) => (): void => {
    reached[list] = START;
    for (const facts of open.values()) {
      if (list === 'pools') facts.pools.length = 0;
      else {
        facts.disks.length = 0;
        facts.malformed.length = 0;
      }
    }
  };
  const read = async <T extends { metadata: { namespace?: string | undefined } }, F>(
    list: List,
    fetch: (page: PageRequest) => Promise<Listed<T>>,
    fact: (item: T) => F | undefined,
    into: (facts: NamespaceFacts) => F[],
  ): Promise<Failure | undefined> => {
    for await (const page of pagesOf(fetch, limit, restart(list))) {
      if (!page.ok) {
        failed = true;
        return page;
      }
      // The unparsed items were the page's too: they move the list on as the parsed ones do.
      const before = reached[list] ?? START;
      let end = before;
      const past = (namespace: string): void => {
        const key = sortKey(namespace);
        if (key < before) ordered = false;
        else if (key > end) end = key;
      };
      for (const item of page.value) {
        const namespace = item.metadata.namespace ?? '';
        past(namespace);
        const f = fact(item);
        if (f === undefined) continue;
        const facts = factsOf(namespace);
        if (facts !== undefined) into(facts).push(f);
      }
      for (const m of page.malformed ?? []) {
        past(m.namespace);
        if (list === 'disks') factsOf(m.namespace)?.malformed.push(m);
      }
      reached[list] = end;
      handOver();
    }
    reached[list] = undefined;
    handOver();
    return undefined;
  };
  const failures = await Promise.all([
    read(
      'pools',
      (p) => kube.listPools(undefined, { ...p, lean: true }),
      (pool) => (mayCollect(pool) ? gcPool(pool) : undefined),
      (facts) => facts.pools,
    ),
    // Existence, not `in (<uids>)`: the API server tests a set requirement value by value, against
    // every disk, for every list that names uids (1.2 s of its CPU in a 5,000-pool pass when it did).
    read(
      'disks',
      (p) => kube.listDisks(undefined, keys.poolUid, { ...p, lean: true }),
      (disk) => (freeCandidate(disk) ? gcDisk(disk) : undefined),
      (facts) => facts.disks,
    ),
  ]);
  return failures.find((f) => f !== undefined);
}
