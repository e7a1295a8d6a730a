/**
 * Bounded parallelism for API calls.
 * @module
 */

/** Concurrency for creates, updates and deletes. */
export const PARALLEL = 16;

/**
 * Concurrency for the disk GC's deletes (each with its Event). A pass may have thousands due, none
 * of which a user waits on one by one, and its writes are preconditioned deletes the API server takes
 * side by side: a raw loop deleting 5,000 disks here took 14.7 s at 16 in flight, 12.9 s at 64 and
 * 10.7 s at 128. 64 keeps the pass near the server's rate and well inside its default limit of
 * 200 mutating requests in flight, leaving room for every other client.
 */
export const GC_PARALLEL = 64;

/**
 * Runs `fn` over `items` with at most `limit` in flight, results in item order. With `slowStart`,
 * the window opens at one call and grows by one with every success (so it doubles per round trip,
 * as ReplicaSet's batches do, without waiting for a whole batch), and no further call starts after a
 * failure: a template every create refuses costs one call, not hundreds. Items never started have
 * no result (the array is shorter).
 */
export async function runBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
  slowStart?: (result: R) => boolean,
): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  if (slowStart === undefined) {
    const worker = async (): Promise<void> => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i] as T);
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    return results;
  }
  const cap = Math.max(limit, 1);
  let window = 1;
  let inFlight = 0;
  let stopped = false;
  let settled = 0;
  return new Promise<R[]>((resolve, reject) => {
    const pump = (): void => {
      while (!stopped && next < items.length && inFlight < window) {
        const i = next++;
        inFlight++;
        fn(items[i] as T).then((r) => {
          results[i] = r;
          inFlight--;
          settled++;
          if (slowStart(r)) window = Math.min(window + 1, cap);
          else stopped = true;
          pump();
        }, reject);
      }
      if (inFlight === 0) resolve(results.slice(0, settled));
    };
    pump();
  });
}

/**
 * A bound shared by several callers: at most `limit` calls given to the returned function are in
 * flight together, the others wait in order. A GC pass's windows in flight share one, so the pass
 * never has more than {@link GC_PARALLEL} deletes out whatever the number of windows.
 */
export function sharedBound(limit: number): <R>(fn: () => Promise<R>) => Promise<R> {
  let inFlight = 0;
  const waiting: Array<() => void> = [];
  return async <R>(fn: () => Promise<R>): Promise<R> => {
    // A freed slot is handed to the next waiter as it is, so the count only drops when none waits.
    if (inFlight >= Math.max(limit, 1)) await new Promise<void>((r) => waiting.push(r));
    else inFlight++;
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next === undefined) inFlight--;
      else next();
    }
  };
}
