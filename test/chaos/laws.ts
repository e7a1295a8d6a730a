/**
 * End-of-trial checks on live state: convergence (and, after a crash, L4: no extra VM, no orphan, no
 * lost Retain disk), plus resync-until-converged and the L5 quiescence probe.
 * @module
 */
import type { Hono } from 'hono';
import { PING, keys } from '../../shared/api/index.js';
import { templateHash, withoutDoneDeletes } from '../../shared/domain/index.js';
import type { NodeEnv } from '../../shared/http/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { DELETE, RETAIN, writesBetween } from './kit.js';
import type { Deletion, Observer, Seen } from './observer.js';
import { diskRefsOf, isStandbySeen } from './observer.js';

import { eventInit } from '../../local/events.js';

export { eventInit };

/** A PingSource tick for one namespace. */
export const pingInit = (namespace: string): RequestInit => eventInit(PING, { namespace });

/**
 * The periodic resync: ticks until a reconcile answers 202/204 (converged) — each 503 is a
 * redelivery. Returns the number of ticks.
 */
export async function resync(
  app: Hono<NodeEnv>,
  namespace: string,
  maxTicks = 30,
): Promise<{ ticks: number; converged: boolean }> {
  for (let t = 1; t <= maxTicks; t++) {
    const res = await app.request('/', pingInit(namespace));
    if (res.status === 202 || res.status === 204) return { ticks: t, converged: true };
  }
  return { ticks: maxTicks, converged: false };
}

/** L5: one more delivery after convergence writes nothing. Returns the violation, if any. */
export async function quiescent(
  app: Hono<NodeEnv>,
  kube: Kube,
  namespace: string,
  pool: string,
): Promise<string | undefined> {
  const before = kube.counts();
  const res = await app.request(
    '/',
    eventInit('dev.knative.apiserver.ref.update', {
      apiVersion: 'virtualization.deckhouse.io/v1alpha2',
      kind: 'VirtualMachinePool',
      name: pool,
      namespace,
    }),
  );
  const after = kube.counts();
  const w = writesBetween(before, after);
  if (w !== 0 || res.status !== 202) {
    const verbs = Object.keys(after)
      .filter((k) => !k.includes(':') && (after[k] ?? 0) !== (before[k] ?? 0))
      .map((k) => `${k} ${(after[k] ?? 0) - (before[k] ?? 0)}`);
    return `L5: ${pool}: a reconcile with nothing to do answered ${res.status} and made ${w} writes (${verbs.join(', ')})`;
  }
  return undefined;
}

/** What the end state of a pool must look like. */
export interface Expect {
  readonly pool: string;
  /** Live members expected (spec.replicas unless an Explicit pool is oversized). */
  readonly members: number;
  /** Retain disks that existed before and must still exist (no lost Retain disk). */
  readonly retained?: ReadonlySet<string>;
  /** Exactly this many Retain disks of the pool (no orphan created by a crash). */
  readonly retainCount?: number;
  /** Surplus members protection holds (`status.heldReplicas`), when known. */
  readonly held?: number;
  /** Standby members expected (`spec.standby.replicas`), when the pool keeps a standby. */
  readonly standby?: number;
}

/**
 * Convergence and L4 on live state: members, revision, intent cleared, every reference resolves, no
 * Retain disk shared, free Retain disks stamped, Delete disks only with their VM, nothing lost.
 */
export async function checkConverged(kube: Kube, obs: Observer, e: Expect): Promise<string[]> {
  const out: string[] = [];
  const ns = obs.namespaceName;
  const got = await kube.getPool(ns, e.pool);
  if (!got.ok) return [`convergence: ${e.pool}: ${got.message}`];
  const pool = got.value;
  const st = pool.status ?? {};
  const everyone = obs.live(e.pool);
  const all = obs.members(e.pool);
  const say = (s: string): void => void out.push(`${e.pool}: ${s}`);
  if (all.length !== everyone.length)
    say(`${all.length - everyone.length} members still Terminating`);
  const spares = everyone.filter(isStandbySeen);
  const live = everyone.filter((m) => !isStandbySeen(m));
  if (live.length !== e.members)
    say(`L4/convergence: ${live.length} live replicas, want ${e.members}`);
  if (spares.length !== (e.standby ?? 0))
    say(`L4/convergence: ${spares.length} standby members, want ${e.standby ?? 0}`);
  if (e.standby !== undefined && st.standbyReplicas !== spares.length)
    say(`status.standbyReplicas ${st.standbyReplicas} but ${spares.length} standby members`);
  // Recorded deletes that are done (no live member has their uid) are inert: a later write drops them.
  const intent = withoutDoneDeletes(st, new Set(everyone.map((m) => m.metadata.uid)))?.intent;
  if (intent !== undefined && Object.values(intent).some((v) => Array.isArray(v) && v.length > 0))
    say(`intent not cleared: ${JSON.stringify(intent)}`);
  if ((pool.metadata.annotations?.[keys.scaleDownTargets] ?? '') !== '')
    say(`scaledownwith targets not cleared`);
  if (st.replicas !== live.length)
    say(`status.replicas ${st.replicas} but ${live.length} replicas`);
  if ((st.drainingReplicas ?? 0) !== 0)
    say(`status.drainingReplicas ${st.drainingReplicas} at rest`);
  if (e.held !== undefined && (st.heldReplicas ?? 0) !== e.held)
    say(`status.heldReplicas ${st.heldReplicas} but ${e.held} held`);
  for (const m of everyone)
    if (m.metadata.annotations?.[keys.drainRequested] !== undefined)
      say(`member ${m.metadata.name} still marked drain-requested at rest`);
  if (st.observedGeneration !== pool.metadata.generation) say(`observedGeneration behind`);
  const hash = templateHash(pool.spec.virtualMachineTemplate);
  for (const m of everyone)
    if (m.metadata.labels?.[keys.templateHash] !== hash)
      say(`member ${m.metadata.name} not rolled out`);
  const disks = obs.poolDisks(e.pool).filter((d) => d.metadata.deletionTimestamp === undefined);
  const byName = new Map(disks.map((d) => [d.metadata.name, d]));
  const holders = new Map<string, string>();
  const vmNames = new Set([...obs.vms.keys()]);
  for (const m of everyone) {
    const refs = diskRefsOf(m);
    if (refs.length !== 2) say(`member ${m.metadata.name} has ${refs.length} disks`);
    for (const r of refs) {
      if (!byName.has(r)) say(`member ${m.metadata.name} references missing disk ${r}`);
      const h = holders.get(r);
      if (h !== undefined) say(`L3: disk ${r} held by ${h} and ${m.metadata.name}`);
      holders.set(r, m.metadata.name);
    }
  }
  let retain = 0;
  for (const d of disks) {
    const t = d.metadata.labels?.[keys.diskTemplate];
    const owner = d.metadata.ownerReferences?.[0];
    if (t === RETAIN) {
      retain++;
      if (owner?.kind !== 'VirtualMachinePool' || owner.uid !== pool.metadata.uid)
        say(`L4 orphan: Retain disk ${d.metadata.name} not owned by the pool`);
      const free = d.metadata.annotations?.[keys.freeSince] !== undefined;
      if (!holders.has(d.metadata.name) && !free)
        say(`free Retain disk ${d.metadata.name} not stamped free-since`);
      if (holders.has(d.metadata.name) && free)
        say(`Retain disk ${d.metadata.name} in use but stamped free`);
    } else if (t === DELETE && !holders.has(d.metadata.name)) {
      // A Delete disk whose VM is gone waits for the garbage collector; one whose VM lives is an orphan.
      if (owner?.kind !== 'VirtualMachine')
        say(`L4 orphan: Delete disk ${d.metadata.name} without its VM as owner`);
      else if (vmNames.has(owner.name))
        say(`L4 orphan: Delete disk ${d.metadata.name} of ${owner.name} not referenced`);
    }
  }
  for (const n of e.retained ?? []) if (!byName.has(n)) say(`L4 lost Retain disk ${n}`);
  if (e.retainCount !== undefined && retain !== e.retainCount)
    say(`L4: ${retain} Retain disks, want ${e.retainCount} (orphan or lost)`);
  return out;
}

/** Retain disks of a pool (not Terminating). */
export function retainDisks(obs: Observer, pool: string): Seen[] {
  return obs
    .poolDisks(pool)
    .filter(
      (d) =>
        d.metadata.labels?.[keys.diskTemplate] === RETAIN &&
        d.metadata.deletionTimestamp === undefined,
    );
}

/**
 * Names a scale-down by `n` removes from `members`, by the fleet-control rules, written out apart
 * from the domain's ranking so the two can disagree: protected members never; a lower deletion cost
 * first (malformed or out of int32: 0); then members without a node, then the node with the most
 * members still staying (counted again after each pick); then the policy's age (creation time,
 * planned generation, name).
 */
export function expectedVictims(members: readonly Seen[], policy: string, n: number): Set<string> {
  if (policy === 'Explicit' || n <= 0) return new Set();
  const note = (m: Seen, k: string): string | undefined => m.metadata.annotations?.[k];
  const cost = (m: Seen): number => {
    const t = note(m, keys.deletionCost) ?? '0';
    const v = /^[+-]?[0-9]+$/.test(t) ? Number(t) : 0;
    return v >= -(2 ** 31) && v < 2 ** 31 ? v : 0;
  };
  const born = (m: Seen): number => {
    const g = note(m, keys.createdGeneration);
    return g !== undefined && /^[0-9]+$/.test(g) ? Number(g) : -1;
  };
  /** Negative when `a` is older. */
  const age = (a: Seen, b: Seen): number => {
    const x = a.metadata.creationTimestamp;
    const y = b.metadata.creationTimestamp;
    if (x !== y) return x < y ? -1 : 1;
    if (born(a) !== born(b)) return born(a) - born(b);
    return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
  };
  let staying = [...members];
  const out: string[] = [];
  while (out.length < n) {
    const load = new Map<string, number>();
    for (const m of staying) {
      const node = m.status?.nodeName;
      if (node) load.set(node, (load.get(node) ?? 0) + 1);
    }
    const crowd = (m: Seen): number => {
      const node = m.status?.nodeName;
      return node ? (load.get(node) ?? 0) : Number.POSITIVE_INFINITY;
    };
    const goesFirst = (a: Seen, b: Seen): boolean => {
      if (cost(a) !== cost(b)) return cost(a) < cost(b);
      if (crowd(a) !== crowd(b)) return crowd(a) > crowd(b);
      return policy === 'NewestFirst' ? age(a, b) > 0 : age(a, b) < 0;
    };
    const open = staying.filter((m) => note(m, keys.protected) !== 'true');
    if (open.length === 0) break;
    const pick = open.reduce((best, m) => (goesFirst(m, best) ? m : best));
    out.push(pick.metadata.name);
    staying = staying.filter((m) => m !== pick);
  }
  return new Set(out);
}

/**
 * Fleet-control laws on the members vmpool deleted (the user's own deletions left out): a protected
 * member is never deleted; in a pool that drains, a member is deleted only once it was asked to
 * drain and then was marked drained or reached its timeout.
 */
export function checkDeletions(
  deleted: readonly Deletion[],
  drainTimeoutMs: number | undefined,
): string[] {
  const out: string[] = [];
  for (const d of deleted) {
    if (d.annotations[keys.protected] === 'true')
      out.push(`protected member ${d.name} deleted by vmpool`);
    if (drainTimeoutMs === undefined) continue;
    const asked = d.annotations[keys.drainRequested];
    if (asked === undefined) {
      out.push(`drain: ${d.name} deleted without being asked to drain`);
      continue;
    }
    const drained = d.annotations[keys.drained] === 'true';
    // A VM without a finalizer vanishes at once: the watch's delivery time bounds the deletion
    // from above (same clock as the drain's request), close enough to catch an early one.
    const at = d.at === undefined ? d.seen : Date.parse(d.at);
    if (!drained && at < Date.parse(asked) + drainTimeoutMs)
      out.push(
        `drain: ${d.name} deleted at ${new Date(at).toISOString()} before drained or timed out (asked ${asked})`,
      );
  }
  return out;
}
