import { afterEach, describe, expect, it, vi } from 'vitest';
import { NOW } from '../../test/unit/builders.js';
import { createRechecks, RECHECK_SLACK_MS, recheckConverged } from './recheck.js';
import type { PoolRef } from './scope.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('createRechecks', () => {
  it('runs once at the deadline (plus slack); an earlier deadline replaces a later one', () => {
    vi.useFakeTimers();
    vi.setSystemTime(NOW);
    const r = createRechecks(() => new Date());
    const runs: string[] = [];
    r.at('ci/runners', new Date(NOW.getTime() + 60_000), () => runs.push('late'));
    r.at('ci/runners', new Date(NOW.getTime() + 30_000), () => runs.push('early'));
    r.at('ci/runners', new Date(NOW.getTime() + 45_000), () => runs.push('ignored'));
    expect(r.pending()).toEqual(['ci/runners']);
    vi.advanceTimersByTime(30_000 + RECHECK_SLACK_MS - 1);
    expect(runs).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(runs).toEqual(['early']);
    vi.advanceTimersByTime(120_000);
    expect(runs).toEqual(['early']);
    expect(r.pending()).toEqual([]);
  });

  it('a deadline already past runs right away', () => {
    vi.useFakeTimers();
    vi.setSystemTime(NOW);
    const r = createRechecks(() => new Date());
    const runs: number[] = [];
    r.at('ci/x', new Date(NOW.getTime() - 5_000), () => runs.push(1));
    vi.advanceTimersByTime(RECHECK_SLACK_MS);
    expect(runs).toEqual([1]);
  });
});

describe('recheckConverged', () => {
  it('schedules only converged pools with a deadline, and runs each with its own ref', () => {
    vi.useFakeTimers();
    vi.setSystemTime(NOW);
    const r = createRechecks(() => new Date());
    const soon = new Date(NOW.getTime() + 10_000);
    const ran: PoolRef[] = [];
    recheckConverged(
      r,
      [
        {
          pool: 'ci/runners',
          ref: { namespace: 'ci', name: 'runners' },
          outcome: { kind: 'converged', passes: 1, actions: 1, recheckAt: soon },
        },
        {
          pool: 'ci/idle',
          ref: { namespace: 'ci', name: 'idle' },
          outcome: { kind: 'converged', passes: 1, actions: 0 },
        },
        {
          pool: 'ci/busy',
          ref: { namespace: 'ci', name: 'busy' },
          outcome: { kind: 'retry', reason: 'conflict' },
        },
        { pool: '*', outcome: { kind: 'retry', reason: 'list failed' } },
      ],
      (ref) => ran.push(ref),
    );
    expect(r.pending()).toEqual(['ci/runners']);
    vi.advanceTimersByTime(10_000 + RECHECK_SLACK_MS);
    expect(ran).toEqual([{ namespace: 'ci', name: 'runners' }]);
  });
});
