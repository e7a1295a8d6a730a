import { describe, expect, it } from 'vitest';
import { runBounded } from './batch.js';

/** A call that resolves on the next macrotask, counting how many run at once. */
function tracked() {
  let now = 0;
  let peak = 0;
  const started: number[] = [];
  const call = async (x: number): Promise<number> => {
    started.push(x);
    now++;
    peak = Math.max(peak, now);
    await new Promise((r) => setTimeout(r, 0));
    now--;
    return x * 10;
  };
  return { call, started, peak: () => peak };
}

describe('runBounded', () => {
  it('keeps at most `limit` calls in flight and returns results in item order', async () => {
    const t = tracked();
    const out = await runBounded([1, 2, 3, 4, 5, 6, 7], 3, t.call);
    expect(out).toEqual([10, 20, 30, 40, 50, 60, 70]);
    expect(t.peak()).toBe(3);
  });

  it('with slowStart opens the window one success at a time', async () => {
    const t = tracked();
    const out = await runBounded([1, 2, 3, 4, 5, 6], 10, t.call, () => true);
    expect(out).toEqual([10, 20, 30, 40, 50, 60]);
    // Windows of 1, then 2, then 3: never the whole batch at once.
    expect(t.peak()).toBeLessThanOrEqual(3);
  });

  it('with slowStart starts nothing more after a failure: the rest has no result', async () => {
    const t = tracked();
    const out = await runBounded([1, 2, 3, 4], 4, t.call, (r) => r !== 10);
    expect(out).toEqual([10]);
    expect(t.started).toEqual([1]);
  });

  it('rejects when a call throws', async () => {
    const boom = (x: number) => (x === 2 ? Promise.reject(new Error('boom')) : Promise.resolve(x));
    await expect(runBounded([1, 2, 3], 2, boom, () => true)).rejects.toThrow('boom');
  });
});
