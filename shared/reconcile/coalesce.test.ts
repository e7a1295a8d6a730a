import { describe, expect, it } from 'vitest';
import { coalesce } from './coalesce.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('coalesce', () => {
  it('runs once for a lone call', async () => {
    let runs = 0;
    const f = coalesce(
      (k: string) => k,
      () => Promise.resolve(++runs),
    );
    expect(await f('a')).toBe(1);
    expect(runs).toBe(1);
  });

  it('folds calls made during a run into one follow-up run that starts after it', async () => {
    const gate = deferred();
    const started: number[] = [];
    let runs = 0;
    const f = coalesce(
      (k: string) => k,
      async () => {
        const n = ++runs;
        started.push(n);
        if (n === 1) await gate.promise;
        return n;
      },
    );
    const first = f('a');
    const later = [f('a'), f('a'), f('a')];
    expect(runs).toBe(1);
    gate.resolve();
    expect(await first).toBe(1);
    expect(await Promise.all(later)).toEqual([2, 2, 2]);
    expect(runs).toBe(2);
  });

  it("runs the follow-up with every waiter's arguments merged, not only the first's", async () => {
    const gate = deferred();
    const ran: string[] = [];
    type Args = [key: string, reads: readonly string[]];
    const f = coalesce(
      (...[k]: Args) => k,
      async (...[k, reads]: Args) => {
        ran.push(`${k}:${reads.join('+')}`);
        if (ran.length === 1) await gate.promise;
        return reads.join('+');
      },
      ([k, a], [, b]): Args => [k, [...new Set([...a, ...b])].sort()],
    );
    const first = f('a', ['vms']);
    const later = [f('a', ['vms']), f('a', ['claims']), f('a', ['vms'])];
    gate.resolve();
    expect(await first).toBe('vms');
    expect(await Promise.all(later)).toEqual(['claims+vms', 'claims+vms', 'claims+vms']);
    // A run after the lane went idle starts from its own arguments again.
    expect(await f('a', ['vms'])).toBe('vms');
    expect(ran).toEqual(['a:vms', 'a:claims+vms', 'a:vms']);
  });

  it('keeps keys independent', async () => {
    const gate = deferred();
    let runs = 0;
    const f = coalesce(
      (k: string) => k,
      async (k: string) => {
        runs++;
        if (k === 'a') await gate.promise;
        return k;
      },
    );
    const a = f('a');
    expect(await f('b')).toBe('b');
    gate.resolve();
    expect(await a).toBe('a');
    expect(runs).toBe(2);
  });

  it('a failed run still lets the waiting callers run, and they see their own outcome', async () => {
    const gate = deferred();
    let runs = 0;
    const f = coalesce(
      (k: string) => k,
      async () => {
        runs++;
        if (runs === 1) {
          await gate.promise;
          throw new Error('boom');
        }
        return 'ok';
      },
    );
    const first = f('a');
    const second = f('a');
    gate.resolve();
    await expect(first).rejects.toThrow('boom');
    expect(await second).toBe('ok');
  });

  it('starts afresh once idle', async () => {
    let runs = 0;
    const f = coalesce(
      (k: string) => k,
      () => Promise.resolve(++runs),
    );
    await f('a');
    await f('a');
    expect(runs).toBe(2);
  });
});
