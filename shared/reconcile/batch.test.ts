import { describe, expect, it } from 'vitest';
import { runBounded, sharedBound } from './batch.js';

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

describe('sharedBound', () => {
  it('holds every caller together to the bound, runs all, and frees the slot of a call that throws', async () => {
    const bound = sharedBound(3);
    let now = 0;
    let most = 0;
    const call = (fails: boolean) =>
      bound(async () => {
        most = Math.max(most, ++now);
        await new Promise((r) => setTimeout(r, 1));
        now--;
        if (fails) throw new Error('refused');
        return 1;
      });
    // Two callers of ten calls each, one call in five throwing.
    const caller = () =>
      Promise.allSettled(Array.from({ length: 10 }, (_, i) => call(i % 5 === 4)));
    const [a, b] = await Promise.all([caller(), caller()]);
    expect(most).toBe(3);
    const all = [...a, ...b];
    expect(all.filter((r) => r.status === 'fulfilled')).toHaveLength(16);
    expect(all.filter((r) => r.status === 'rejected')).toHaveLength(4);
    // Every slot was given back: three more run at once again.
    most = 0;
    await Promise.all([call(false), call(false), call(false)]);
    expect(most).toBe(3);
  });
});
