/**
 * Who a scale-down removes, and why: one ranking shared by the reconciler and the victims preview.
 * Protected members are never candidates; among the rest, lower deletion cost first, then spread
 * (members without a node, then the node with the most members of the pool), then the policy's age
 * order, ties by name.
 * @module
 */
import type { ScaleDownPolicy, VirtualMachine } from '../api/index.js';
import { keys } from '../api/index.js';
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
 */
export function rankVictims(
  candidates: readonly VirtualMachine[],
  policy: RankingPolicy,
  staying: readonly VirtualMachine[],
  n: number = candidates.length,
): Ranked[] {
  const onNode = occupancy(staying);
  let left = candidates.map((vm) => ({ vm, cost: deletionCost(vm).value }));
  const out: Ranked[] = [];
  while (out.length < n && left.length > 0) {
    const scored = left.map((c): Candidate => ({ ...c, crowd: onNodeOf(c.vm, onNode) }));
    const [chosen, runnerUp] = bestTwo(scored, policy);
    if (chosen === undefined) break;
    const reason =
      runnerUp === undefined
        ? 'OnlyCandidate'
        : (decide(chosen, runnerUp, policy)?.reason ?? 'Name');
    out.push({ ...chosen, reason });
    const node = nodeOf(chosen.vm);
    if (node !== undefined) onNode.set(node, (onNode.get(node) ?? 1) - 1);
    left = left.filter((c) => c.vm !== chosen.vm);
  }
  return out;
}

/** The first and second candidates by the comparator (one pass, no sort). */
function bestTwo(
  scored: readonly Candidate[],
  policy: RankingPolicy,
): [Candidate | undefined, Candidate | undefined] {
  let first: Candidate | undefined;
  let second: Candidate | undefined;
  for (const c of scored) {
    if (first === undefined || compareVictims(c, first, policy) < 0) {
      second = first;
      first = c;
    } else if (second === undefined || compareVictims(c, second, policy) < 0) second = c;
  }
  return [first, second];
}

function onNodeOf(vm: VirtualMachine, onNode: ReadonlyMap<string, number>): number {
  const n = nodeOf(vm);
  return n === undefined ? Infinity : (onNode.get(n) ?? 0);
}
