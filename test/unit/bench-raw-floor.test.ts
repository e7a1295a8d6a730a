/**
 * The raw loop a scale-up is judged against: the faster of the sweep's fastest run and the
 * repetitions' median, so a slowed raw run never flatters vmpool.
 */
import { describe, expect, it } from 'vitest';
import { rawFloor, type SweepPoint } from '../../bench/scaleup.js';

const point = (concurrency: number, ms: number): SweepPoint => ({
  concurrency,
  ms,
  creates: { count: 0, ms: 0 },
});

describe('the best raw loop of a scale-up', () => {
  const sweep = [point(8, 5200), point(16, 4200), point(32, 4600)];

  it('is the sweep’s fastest run when the repetitions ran slower (the 0→1000 of the recorded run)', () => {
    expect(rawFloor(sweep, 6600)).toEqual({ ms: 4200, from: 'sweep' });
  });

  it('is the repetitions’ median when it is the faster', () => {
    expect(rawFloor(sweep, 3900)).toEqual({ ms: 3900, from: 'repetitions' });
  });

  it('keeps the repetitions’ median on a tie, and when the sweep did not run', () => {
    expect(rawFloor(sweep, 4200)).toEqual({ ms: 4200, from: 'repetitions' });
    expect(rawFloor([], 4200)).toEqual({ ms: 4200, from: 'repetitions' });
  });
});
