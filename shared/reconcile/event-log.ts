/**
 * The Events of one executed pass: recorded as actions finish, beyond {@link EVENT_BURST} of one
 * type and reason combined into one, and all awaited once the pass is over.
 * @module
 */
import type { Logger } from 'pino';
import type { VirtualMachinePool } from '../api/index.js';
import type { Action } from '../domain/index.js';
import { claimOfAction, eventFor } from '../domain/index.js';
import type { Kube, PoolEvent } from '../kube/index.js';

/**
 * Events of one type and reason a pass records one by one; the rest become one combined Event (as
 * client-go's recorder combines similar events), so a scale-up by 1,000 writes 11 Events, not 1,000
 * — each is a write the API server pays for as much as a create.
 */
export const EVENT_BURST = 10;

/** The most a note may hold (events.k8s.io/v1 refuses longer ones). */
const NOTE_LIMIT = 1024;

/** One Event standing for `rest` (at least one), with as many of their notes as fit. */
export function combined(first: PoolEvent, rest: readonly PoolEvent[]): PoolEvent {
  let note = `(combined from ${rest.length} similar events)`;
  for (const e of rest) {
    if (note.length + 1 + e.note.length > NOTE_LIMIT - 2) {
      note += ' …';
      break;
    }
    note += ` ${e.note}`;
  }
  return { ...first, note };
}

/**
 * An Event's write, caught where it starts and logged: a refused or throwing Event is never the
 * pass's failure, and a pass that awaits its Events only later (or leaves first, on a throw) leaves
 * no rejection unhandled meanwhile.
 */
export function bestEffort(write: Promise<unknown>, log: Logger, reason: string): Promise<void> {
  return write.then(
    () => undefined,
    (err: unknown) => {
      log.warn({ err, reason }, 'recording an Event failed');
    },
  );
}

/** Where a pass reports what its actions came to, and how it waits for the Events. */
export interface EventLog {
  /** The Event of an action that succeeded or failed (none for some actions). */
  readonly report: (a: Action, ok: boolean, error?: string) => void;
  /** Records the combined Events and waits for every Event of the pass. */
  readonly flush: () => Promise<void>;
}

/**
 * The Events of one pass about `pool`; a refused Event is logged, never the pass's failure.
 * `done` hears of every action that took effect (metrics).
 */
export function eventLog(
  kube: Kube,
  pool: VirtualMachinePool,
  log: Logger,
  done?: (a: Action) => void,
): EventLog {
  const writes: Promise<unknown>[] = [];
  const seen = new Map<string, PoolEvent[]>();
  const record = (ev: PoolEvent): void => {
    // Caught where it starts: an action that throws leaves the pass before the Events are awaited,
    // and a rejection nobody handles would end the process.
    writes.push(bestEffort(kube.recordEvent(pool, ev), log, ev.reason));
  };
  const namespace = pool.metadata.namespace ?? '';
  return {
    report: (a, ok, error) => {
      if (ok) done?.(a);
      const ev = eventFor(a, ok, error);
      if (ev === undefined) return;
      // A claim's holder watches the claim, not the pool: its Events go on both, never combined.
      const claim = claimOfAction(a);
      if (claim !== undefined)
        writes.push(bestEffort(kube.recordClaimEvent(namespace, claim, ev), log, ev.reason));
      const key = `${ev.type}/${ev.reason}`;
      const same = seen.get(key) ?? [];
      if (same.length === 0) seen.set(key, same);
      same.push(ev);
      if (same.length <= EVENT_BURST) record(ev);
    },
    flush: async () => {
      for (const same of seen.values()) {
        const rest = same.slice(EVENT_BURST);
        const first = rest[0];
        if (first !== undefined) record(combined(first, rest));
      }
      await Promise.all(writes);
    },
  };
}
