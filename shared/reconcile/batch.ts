/**
 * Bounded parallelism for API calls.
 * @module
 */

/**
 * Runs `fn` over `items` with at most `limit` in flight. With `slowStart`, batches grow 1, 2, 4, …
 * (as ReplicaSet does) and stop after a batch with a failure, so a template every create refuses
 * costs one call, not hundreds.
 */
export async function runBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
  slowStart?: (result: R) => boolean,
): Promise<R[]> {
  const results: R[] = [];
  if (slowStart === undefined) {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i] as T);
      }
    };
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    return results;
  }
  let size = 1;
  for (let start = 0; start < items.length;) {
    const batch = items.slice(start, start + size);
    const out = await runBounded(batch, limit, fn);
    results.push(...out);
    start += batch.length;
    if (!out.every(slowStart)) break;
    size = Math.min(size * 2, Math.max(limit, 1) * 4);
  }
  return results;
}
