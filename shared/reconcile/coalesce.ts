/**
 * Coalescing deliveries for the same pool inside one process: while a reconcile of a pool runs, every
 * further delivery for it waits for ONE follow-up reconcile that starts after the running one ends,
 * and shares its outcome. Each delivery is still answered by a reconcile that began after it
 * arrived (level-triggered semantics kept), nothing is acknowledged early, and across processes the
 * fencing protocol still decides — this only spares a pool the herd of identical reconciles that
 * one event per created object would start. The follow-up runs with the waiters' arguments merged
 * (`merge`; default: the first waiter's), so no waiter asks for less than it needed.
 * @module
 */

interface Lane<A, R> {
  running: Promise<R> | undefined;
  waiting: Promise<R> | undefined;
  /** The follow-up's arguments, merged over its waiters. */
  args: A | undefined;
}

/** Wraps `run` so concurrent calls with the same key coalesce as described above. */
export function coalesce<A extends unknown[], R>(
  keyOf: (...args: A) => string,
  run: (...args: A) => Promise<R>,
  merge: (waiting: A, next: A) => A = (waiting) => waiting,
): (...args: A) => Promise<R> {
  const lanes = new Map<string, Lane<A, R>>();
  return function coalesced(...args: A): Promise<R> {
    const key = keyOf(...args);
    let lane = lanes.get(key);
    if (lane === undefined) {
      lane = { running: undefined, waiting: undefined, args: undefined };
      lanes.set(key, lane);
    }
    const l = lane;
    const start = (a: A): Promise<R> => {
      const p = run(...a).finally(() => {
        if (l.running === p) l.running = undefined;
        if (l.running === undefined && l.waiting === undefined) lanes.delete(key);
      });
      l.running = p;
      return p;
    };
    if (l.running === undefined) return start(args);
    l.args = l.args === undefined ? args : merge(l.args, args);
    if (l.waiting === undefined) {
      const after = l.running.then(
        () => undefined,
        () => undefined,
      );
      l.waiting = after.then(() => {
        const a = l.args ?? args;
        l.waiting = undefined;
        l.args = undefined;
        return start(a);
      });
    }
    return l.waiting;
  };
}
