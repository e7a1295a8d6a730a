/**
 * A scope's pools a window at a time: one page of pools (cut further where its pools are large),
 * then the VMs, disks and claims of those pools only. A resync tick or a GC pass holds one window,
 * so its memory is bounded by the window, not by the cluster (147 MiB at 1,000 pools when a tick
 * held the whole scope; killed at ~2,000).
 * @module
 */
import type { VirtualMachineClaim, VirtualMachinePool } from '../api/index.js';
import { keys } from '../api/index.js';
import { namespacedKey, sizeOf } from '../domain/index.js';
import type { Kube, Listed, Outcome, PageRequest } from '../kube/index.js';
import { claimsOf } from './converge.js';

/** Pools per window: one list page, and a label selector of 250 uids (about 10 KB of URL). */
export const WINDOW = 250;

/**
 * Up to this many namespaces in a window, what its pools own is listed namespace by namespace (the
 * API server reads only those namespaces); above it, once across the cluster with the window's uids.
 */
export const WINDOW_NAMESPACES = 8;

/**
 * How a window's own lists are read: all of them, in pages of up to 2,000. The window holds every
 * page anyway, so pages of the funnel's 500 only add round trips, and a list that fills its last
 * page exactly costs one more, empty (the API server gives a continue token when it stops at the
 * limit): 1,000 disks of 250 pools took 3 requests, now 1. 2,000 objects keep one response to a few MB.
 */
export const WINDOW_PAGE: PageRequest = { limit: 2000, all: true };

/**
 * About how many objects one window's lists may bring, estimated from its pools ({@link objectsOf}).
 * A page of 250 pools of a few members is one window, but 250 pools of a thousand members are not:
 * eight such pools in one window took a resync tick to 172 MiB. One pool above it is a window of its
 * own (a pool is planned from all its objects at once).
 */
export const WINDOW_OBJECTS = 5000;

/**
 * What a pool's lists are estimated to bring: the pool, and each member with a disk per template.
 * Members are what the pool asks for ({@link sizeOf}) and those it reports beyond its replicas (a
 * scale-down not done yet, growth for claims). Free disks kept for reuse are not counted.
 */
export function objectsOf(pool: VirtualMachinePool): number {
  const beyond = (pool.status?.replicas ?? 0) - (pool.spec.replicas ?? 0);
  const members = sizeOf(pool) + Math.max(0, beyond);
  return 1 + members * (1 + pool.spec.virtualDiskTemplates.length);
}

/**
 * `pools` in order, cut into windows of at most `limit` pools and, past the first pool of each, at
 * most `budget` estimated objects; no pools give one empty window.
 */
export function windowsOf(
  pools: readonly VirtualMachinePool[],
  limit: number,
  budget = WINDOW_OBJECTS,
): VirtualMachinePool[][] {
  const windows: VirtualMachinePool[][] = [];
  let current: VirtualMachinePool[] = [];
  let objects = 0;
  for (const pool of pools) {
    const n = objectsOf(pool);
    if (current.length > 0 && (current.length >= limit || objects + n > budget)) {
      windows.push(current);
      current = [];
      objects = 0;
    }
    current.push(pool);
    objects += n;
  }
  windows.push(current);
  return windows;
}

/** How often an expired continue token (410) restarts a list before the scan gives up. */
const RESTARTS = 3;

type Ok<T> = Listed<T> & { ok: true };

/**
 * A list page by page, `limit` at a time. The next page is read while the caller works on this one
 * (one page ahead at most), and, when the caller already waits for this one, from the moment its
 * body is read ({@link PageRequest.ahead}): the API server serves it while this one is parsed. A page
 * whose continue token expired (a scan slower than the API server's compaction window) restarts the
 * list from the start: the pages after a restart may give again what was given before it, so a
 * caller keys what it keeps by uid, or forgets it when told `restarted`. A failure is the last page
 * given.
 */
export async function* pagesOf<T>(
  read: (page: PageRequest) => Promise<Listed<T>>,
  limit: number,
  restarted: () => void = () => undefined,
): AsyncGenerator<Listed<T>> {
  let restarts = 0;
  // The page this generator awaits (its caller waits for it), and the page after it when asked for early.
  let awaited: Promise<Listed<T>> | undefined;
  let early: { readonly cont: string; readonly page: Promise<Listed<T>> } | undefined;
  const fetch = (cont: string | undefined): Promise<Listed<T>> => {
    // This read's own promise, known once `read` has returned (a token told before that is ignored).
    const own: { page?: Promise<Listed<T>> } = {};
    const ahead = (token: string): void => {
      if (own.page === undefined || awaited !== own.page || early !== undefined) return;
      early = { cont: token, page: fetch(token) };
      // Awaited below, or dropped by a restart or an early stop: never an unhandled rejection.
      early.page.catch(() => undefined);
    };
    // Async, so that even a read that throws at once is a rejection held by the promise, not a throw here.
    own.page = (async () =>
      read({ limit, ...(cont === undefined ? {} : { continue: cont }), ahead }))();
    return own.page;
  };
  let cont: string | undefined;
  let next = fetch(undefined);
  for (;;) {
    awaited = next;
    const page = await next;
    awaited = undefined;
    const asked = early;
    early = undefined;
    if (!page.ok && page.code === 410 && cont !== undefined && restarts < RESTARTS) {
      restarts++;
      cont = undefined;
      // Every page before it was given, and the one asked for ahead is dropped: a caller that
      // forgets here what it kept sees nothing of the list before the restart.
      restarted();
      next = fetch(undefined);
      continue;
    }
    if (!page.ok) {
      yield page;
      return;
    }
    cont = page.next;
    if (cont !== undefined) {
      next = asked?.cont === cont ? asked.page : fetch(cont);
      // A caller that stops early never awaits it: what it throws must not become an unhandled
      // rejection (awaited above, it is thrown to the caller as before).
      next.catch(() => undefined);
    }
    yield page;
    if (cont === undefined) return;
  }
}

/**
 * The scope's pools a window at a time ({@link pagesOf}, one page of `limit` pools ahead), cut by
 * {@link windowsOf}. After a restart the pools already given are left out.
 */
export async function* poolPages(
  kube: Kube,
  namespace: string | undefined,
  limit = WINDOW,
): AsyncGenerator<Listed<VirtualMachinePool>> {
  const given = new Set<string>();
  for await (const page of pagesOf((p) => kube.listPools(namespace, p), limit)) {
    if (!page.ok) {
      yield page;
      return;
    }
    const fresh = page.value.filter((p) => !given.has(p.metadata.uid ?? ''));
    for (const p of fresh) given.add(p.metadata.uid ?? '');
    // A server that ignored the limit still gives windows of `limit` (selectors stay short), and
    // large pools come fewer to a window (memory stays bounded by objects, not only by pools).
    for (const window of windowsOf(fresh, limit)) yield { ...page, value: window };
  }
}

/** Where one window's objects are listed, each with the label selector of its pools. */
export interface Place {
  /** A namespace, or undefined for the cluster. */
  readonly namespace: string | undefined;
  /** `<pool-uid label> in (<uids>)`: the objects of the window's pools there. */
  readonly selector: string;
}

const ownedBy = (pools: readonly VirtualMachinePool[]): string =>
  `${keys.poolUid} in (${pools.map((p) => p.metadata.uid ?? '').join(',')})`;

/** Where the objects of `pools` are listed: each of their namespaces, or the cluster once. */
export function placesOf(pools: readonly VirtualMachinePool[]): Place[] {
  const byNamespace = new Map<string, VirtualMachinePool[]>();
  for (const p of pools) {
    if ((p.metadata.uid ?? '') === '') continue;
    const ns = p.metadata.namespace ?? '';
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), p]);
  }
  if (byNamespace.size > WINDOW_NAMESPACES)
    return [{ namespace: undefined, selector: ownedBy(pools.filter((p) => p.metadata.uid)) }];
  return [...byNamespace].map(([namespace, group]) => ({ namespace, selector: ownedBy(group) }));
}

/** Lists `list` at every place in pages of {@link WINDOW_PAGE}, as one list: the first failure fails it. */
export async function listAt<T>(
  places: readonly Place[],
  list: (namespace: string | undefined, selector: string, page: PageRequest) => Promise<Listed<T>>,
): Promise<Listed<T>> {
  const parts = await Promise.all(places.map((p) => list(p.namespace, p.selector, WINDOW_PAGE)));
  const failed = parts.find((p) => !p.ok);
  if (failed !== undefined) return failed;
  const ok = parts as Ok<T>[];
  return {
    ok: true,
    value: ok.flatMap((p) => p.value),
    malformed: ok.flatMap((p) => p.malformed ?? []),
  };
}

/** A window's claims by the pool they name (`namespace/name`), and the uids of those that do not parse. */
export interface WindowClaims {
  readonly byPool: ReadonlyMap<string, VirtualMachineClaim[]>;
  readonly unreadable: readonly string[];
}

/** The key a claim and its pool share: a claim names its pool by name, in its own namespace. */
export const claimKey: (namespace: string | undefined, pool: string | undefined) => string =
  namespacedKey;

/**
 * The claims of the window's namespaces, grouped by the window's pool each names (a claim names its
 * pool by name, not by label, so they are listed by namespace and the others dropped on the way).
 */
export async function claimsAt(
  kube: Kube,
  places: readonly Place[],
  pools: readonly VirtualMachinePool[],
): Promise<Outcome<WindowClaims>> {
  const got = await listAt(places, (ns, _, page) => claimsOf(kube, ns, page));
  if (!got.ok) return got;
  const byPool = new Map<string, VirtualMachineClaim[]>(
    pools.map((p) => [claimKey(p.metadata.namespace, p.metadata.name), []]),
  );
  for (const c of got.value) byPool.get(claimKey(c.metadata.namespace, c.spec.poolName))?.push(c);
  return {
    ok: true,
    value: { byPool, unreadable: (got.malformed ?? []).map((m) => m.uid) },
  };
}
