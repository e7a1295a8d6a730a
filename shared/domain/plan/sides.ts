/**
 * The replicas and the standby after the count: which standby members the replicas took
 * (promotions), who stays on either side for the replace step to judge, the names the standby may
 * no longer use, and on which side each replacement leaves.
 * @module
 */
import type { VirtualMachine } from '../../api/index.js';
import { nameOf, takenWith } from '../fleet/index.js';
import type { TakenNames } from '../fleet/index.js';
import type { Count, Departure } from './count.js';
import type { View } from './observe.js';
import type { StandbySide, Split } from './partition.js';

/** What {@link afterCount} reads. */
export interface AfterCountInput {
  readonly split: Pick<
    StandbySide,
    'standbyDeletes' | 'standbyReplacements' | 'standbyLive' | 'standbyCreates'
  >;
  readonly count: Pick<Count, 'promotions' | 'staying' | 'creates'>;
  /** Names never to use for a new member, before the count's creates. */
  readonly taken: TakenNames;
}

/** Both sides once the count has decided. */
export interface Sides {
  /** Standby members promoted by the count. */
  readonly promoted: ReadonlySet<string>;
  /** Members that stay: the count's replicas, then the standby members it left alone. */
  readonly staying: readonly VirtualMachine[];
  /** Creates recorded or decided on both sides, not yet seen: new members out of service. */
  readonly creates: number;
  /** Names never to use for a new member, the count's creates included. */
  readonly taken: TakenNames;
}

/** The sides after the count. */
export function afterCount(input: Readonly<AfterCountInput>): Sides {
  const { split, count, taken } = input;
  const promoted = new Set(count.promotions.map((r) => r.name));
  // Standby members the count left alone: not promoted, not recorded to leave.
  const out = new Set([...split.standbyDeletes, ...split.standbyReplacements].map((r) => r.name));
  const kept = split.standbyLive.filter((m) => !promoted.has(nameOf(m)) && !out.has(nameOf(m)));
  return {
    promoted,
    staying: [...count.staying, ...kept],
    creates: count.creates.length + split.standbyCreates.length,
    taken: takenWith(taken, count.creates),
  };
}

/** What {@link replacedBySide} reads. */
export interface ReplacedInput {
  readonly split: Pick<Split<Pick<View, 'live'>>, 'active'>;
  readonly promoted: ReadonlySet<string>;
  /** The replace step's victims, replicas and standby members alike. */
  readonly victims: readonly Departure[];
}

/**
 * The replacements on each side: a replica (promoted ones included) leaves through the leave step,
 * a standby member through the standby step.
 */
export function replacedBySide(input: Readonly<ReplacedInput>): {
  readonly replicas: readonly Departure[];
  readonly standby: readonly Departure[];
} {
  const { split, promoted, victims } = input;
  const isReplica = (d: Departure): boolean =>
    split.active.live.has(nameOf(d.vm)) || promoted.has(nameOf(d.vm));
  return { replicas: victims.filter(isReplica), standby: victims.filter((d) => !isReplica(d)) };
}
