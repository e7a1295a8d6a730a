/**
 * How many replicas to create and which members leave, counting recorded intent so that concurrent
 * and repeated reconciles agree.
 * @module
 */
import type { ScaleDownPolicy, VirtualMachine } from '../api/index.js';
import { byAge, isTerminating, nameOf } from './membership.js';
import type { Rand } from './names.js';
import { ALPHABET, VM_SUFFIX, vmName } from './names.js';

/** What the scale step sees. */
export interface ScaleInput {
  readonly pool: string;
  readonly desired: number;
  readonly policy: ScaleDownPolicy;
  readonly members: readonly VirtualMachine[];
  /** Recorded creates not yet observed as members. */
  readonly pendingCreates: readonly string[];
  /** Names already leaving on purpose: recorded victims and scaledownwith targets still alive. */
  readonly leaving: ReadonlySet<string>;
  /** Names that may not be used for a new VM (every VM name seen, pending ones included). */
  readonly taken: ReadonlySet<string>;
}

/** The scale decision. */
export interface ScaleDecision {
  readonly creates: string[];
  readonly victims: VirtualMachine[];
}

/**
 * Members plus pending creates count toward replicas, Terminating members included (they still hold
 * resources); the surplus is reduced by members already leaving; `Explicit` never picks victims.
 */
export function decideScale(input: ScaleInput, rand: Rand): ScaleDecision {
  const count = input.members.length + input.pendingCreates.length;
  if (count < input.desired) {
    return { creates: freshNames(input, input.desired - count, rand), victims: [] };
  }
  if (count === input.desired || input.policy === 'Explicit') return { creates: [], victims: [] };
  const terminating = input.members.filter(isTerminating).length;
  const leaving = input.members.filter((m) => !isTerminating(m) && input.leaving.has(nameOf(m)));
  const toDelete = count - input.desired - terminating - leaving.length;
  if (toDelete <= 0) return { creates: [], victims: [] };
  const candidates = input.members.filter(
    (m) => !isTerminating(m) && !input.leaving.has(nameOf(m)),
  );
  return { creates: [], victims: rankVictims(candidates, input.policy).slice(0, toDelete) };
}

/** Candidates in removal order for the policy (see {@link byAge}). */
export function rankVictims(
  candidates: readonly VirtualMachine[],
  policy: ScaleDownPolicy,
): VirtualMachine[] {
  if (policy === 'Explicit') return [];
  const sorted = [...candidates].sort(byAge);
  return policy === 'NewestFirst' ? sorted.reverse() : sorted;
}

/** Steps a name's suffix through the alphabet until it is free: randomness that repeats still ends. */
function nextFree(name: string, taken: ReadonlySet<string>): string {
  for (let pos = name.length - 1; pos > name.length - 1 - VM_SUFFIX; pos--) {
    for (let i = 0; i < ALPHABET.length; i++) {
      const candidate = name.slice(0, pos) + ALPHABET.charAt(i) + name.slice(pos + 1);
      if (!taken.has(candidate)) return candidate;
    }
  }
  return name;
}

function freshNames(input: ScaleInput, n: number, rand: Rand): string[] {
  const taken = new Set(input.taken);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    let name = vmName(input.pool, rand);
    // 27^5 names: a collision is rare, but a repeat would collapse two creates into one.
    for (let tries = 0; taken.has(name) && tries < 32; tries++) name = vmName(input.pool, rand);
    if (taken.has(name)) name = nextFree(name, taken);
    taken.add(name);
    out.push(name);
  }
  return out;
}
