/**
 * Who a scale-down removes, and why: one ranking shared by the reconciler and the victims preview.
 * Protected members are never candidates; among the rest, lower deletion cost first, then spread
 * (members without a node, then the node with the most members of the pool), then the policy's age
 * order, ties by name.
 * @module
 */
import type { ScaleDownPolicy, VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { createdGeneration, nameOf } from './membership.js';

/** A policy that picks victims (`Explicit` never does). */
export type RankingPolicy = Exclude<ScaleDownPolicy, 'Explicit'>;

/** The key that put a victim before the best member left after it. */
export type RankReason = 'DeletionCost' | 'Spread' | 'Age' | 'Name' | 'OnlyCandidate';

/** A member with the keys it is ranked by. */
export interface Candidate {
  readonly vm: VirtualMachine;
  readonly cost: number;
  /** Staying members of the pool on its node; Infinity without a node (it goes first). */
  readonly crowd: number;
}

/** A ranked victim, with its keys when it was picked and the key that picked it. */
export interface Ranked extends Candidate {
  readonly reason: RankReason;
}

const INT32 = /^[+-]?\d{1,10}$/;

/** True when a member carries `vmpool.virtualization.deckhouse.io/protected: "true"`. */
export function isProtected(vm: VirtualMachine): boolean {
  return vm.metadata.annotations?.[keys.protected] === 'true';
}

/** The deletion cost of a member: the annotation's int32, 0 when absent; `malformed` when unreadable. */
export function deletionCost(vm: VirtualMachine): { value: number; malformed?: string } {
  const text = vm.metadata.annotations?.[keys.deletionCost];
  if (text === undefined) return { value: 0 };
  const n = INT32.test(text) ? Number(text) : NaN;
  // Outside int32 is refused like pod-deletion-cost is: counted as 0 (and reported).
  if (!Number.isInteger(n) || n > 2147483647 || n < -2147483648)
    return { value: 0, malformed: text };
  return { value: n };
}

/** The node a member runs on (`status.nodeName`), if scheduled. */
export function nodeOf(vm: VirtualMachine): string | undefined {
  const n = vm.status?.nodeName;
  return n === undefined || n === '' ? undefined : n;
}

/** Members per node among `staying`. */
export function occupancy(staying: readonly VirtualMachine[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of staying) {
    const n = nodeOf(m);
    if (n !== undefined) out.set(n, (out.get(n) ?? 0) + 1);
  }
  return out;
}

/** The first key on which `a` and `b` differ and which goes first (negative: `a`). */
function decide(
  a: Candidate,
  b: Candidate,
  policy: RankingPolicy,
): { reason: Exclude<RankReason, 'OnlyCandidate'>; order: number } | undefined {
  if (a.cost !== b.cost) return { reason: 'DeletionCost', order: a.cost - b.cost };
  if (a.crowd !== b.crowd) return { reason: 'Spread', order: a.crowd > b.crowd ? -1 : 1 };
  const newest = policy === 'NewestFirst' ? -1 : 1;
  const ta = a.vm.metadata.creationTimestamp ?? '';
  const tb = b.vm.metadata.creationTimestamp ?? '';
  if (ta !== tb) return { reason: 'Age', order: (ta < tb ? -1 : 1) * newest };
  const ga = createdGeneration(a.vm);
  const gb = createdGeneration(b.vm);
  if (ga !== gb) return { reason: 'Age', order: (ga - gb) * newest };
  const na = nameOf(a.vm);
  const nb = nameOf(b.vm);
  if (na !== nb) return { reason: 'Name', order: (na < nb ? -1 : 1) * newest };
  return undefined;
}

/**
 * The ranking comparator: negative when `a` leaves before `b`. Without costs and nodes it is the
 * policy's age order (creation time, then planned generation, then name; reversed for NewestFirst).
 */
export function compareVictims(a: Candidate, b: Candidate, policy: RankingPolicy): number {
  return decide(a, b, policy)?.order ?? 0;
}

/**
 * The first `n` victims among `candidates`, each with the key that chose it over the runner-up.
 * Spread is counted again after each pick (over `staying`: every member that stays, protected ones
 * included), so removing n at once picks the same members as n scale-downs by one.
 *
 * Members of one node share their spread key at every step, so each node keeps one order of its
 * own: sorted once, its candidates are taken from the front, and a pick compares only the front
 * member of each node (O(n log n + n × nodes), not a rescan of every candidate per pick).
 */
export function rankVictims(
  candidates: readonly VirtualMachine[],
  policy: RankingPolicy,
  staying: readonly VirtualMachine[],
  n: number = candidates.length,
): Ranked[] {
  const onNode = occupancy(staying);
  const queues = new Map<string | undefined, Candidate[]>();
  for (const vm of candidates) {
    const node = nodeOf(vm);
    const c: Candidate = { vm, cost: deletionCost(vm).value, crowd: 0 };
    const q = queues.get(node);
    if (q === undefined) queues.set(node, [c]);
    else q.push(c);
  }
  // Within a node the spread key is equal, so the comparator orders it by the other keys alone.
  const fronts = [...queues].map(([node, q]) => ({
    node,
    q: q.sort((a, b) => compareVictims(a, b, policy)),
    at: 0,
  }));
  const scored = (c: Candidate | undefined, node: string | undefined): Candidate | undefined =>
    c === undefined
      ? undefined
      : { ...c, crowd: node === undefined ? Infinity : (onNode.get(node) ?? 0) };
  const better = (a: Candidate | undefined, b: Candidate | undefined): boolean =>
    a !== undefined && (b === undefined || compareVictims(a, b, policy) < 0);
  const out: Ranked[] = [];
  while (out.length < n) {
    let best: (typeof fronts)[number] | undefined;
    let chosen: Candidate | undefined;
    let runnerUp: Candidate | undefined;
    for (const f of fronts) {
      const c = scored(f.q[f.at], f.node);
      if (better(c, chosen)) {
        runnerUp = chosen;
        chosen = c;
        best = f;
      } else if (better(c, runnerUp)) runnerUp = c;
    }
    if (best === undefined || chosen === undefined) break;
    // The chosen node's next member may rank between the chosen one and the other nodes' fronts.
    const next = scored(best.q[best.at + 1], best.node);
    if (better(next, runnerUp)) runnerUp = next;
    const reason =
      runnerUp === undefined
        ? 'OnlyCandidate'
        : (decide(chosen, runnerUp, policy)?.reason ?? 'Name');
    out.push({ ...chosen, reason });
    best.at++;
    if (best.node !== undefined) onNode.set(best.node, (onNode.get(best.node) ?? 1) - 1);
  }
  return out;
}
