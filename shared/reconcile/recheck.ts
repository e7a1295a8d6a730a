/**
 * A reconcile at a drain deadline: one best-effort timer per pool, so a drain that times out is acted
 * on when it does rather than at the next resync tick. The tick stays the guarantee (a timer dies
 * with its process); the timer holds no state a reconcile needs, only a hint of when to look.
 * @module
 */
import type { ScopedOutcome } from './resync.js';
import type { PoolRef } from './scope.js';

/** Timer functions (injectable for tests). */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const nodeTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (h) => {
    clearTimeout(h as NodeJS.Timeout);
  },
};

/** Deadlines have second precision and clocks skew a little: look a moment after. */
export const RECHECK_SLACK_MS = 500;

/** Schedules rechecks by key (a pool's `namespace/name`). */
export interface Rechecks {
  /** Runs `run` once at `when` (plus slack); an earlier `when` for the same key replaces a later one. */
  at(key: string, when: Date, run: () => void): void;
  /** Keys with a recheck scheduled. */
  pending(): string[];
}

/** Rechecks timed against `now`. */
export function createRechecks(now: () => Date, timers: Timers = nodeTimers): Rechecks {
  const scheduled = new Map<string, { when: number; handle: unknown }>();
  return {
    at(key, when, run) {
      const t = when.getTime();
      const old = scheduled.get(key);
      if (old !== undefined && old.when <= t) return;
      if (old !== undefined) timers.clear(old.handle);
      const delay = Math.max(0, t - now().getTime()) + RECHECK_SLACK_MS;
      const handle = timers.set(() => {
        scheduled.delete(key);
        run();
      }, delay);
      scheduled.set(key, { when: t, handle });
    },
    pending: () => [...scheduled.keys()],
  };
}

/**
 * Schedules a reconcile of each pool that converged with a deadline ahead (a drain, a startup
 * timeout, an age), at that deadline; `run` gets the pool as reconciled, never a parsed key.
 */
export function recheckConverged(
  rechecks: Rechecks,
  results: readonly ScopedOutcome[],
  run: (pool: PoolRef) => void,
): void {
  for (const { pool, ref, outcome } of results) {
    if (ref === undefined || outcome.kind !== 'converged' || outcome.recheckAt === undefined)
      continue;
    rechecks.at(pool, outcome.recheckAt, () => {
      run(ref);
    });
  }
}
