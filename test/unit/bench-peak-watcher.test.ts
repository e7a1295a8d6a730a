/**
 * A tick's failure report gives the peak RSS read while the process ran, not an error of its own
 * once the process (and its /proc entry) is gone.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { peakWatcher } from '../../bench/ticks.js';

describe('peakWatcher', () => {
  it('keeps the peak RSS read while the process ran after it exits', async () => {
    const child = spawn(process.execPath, [
      '-e',
      'const a = Buffer.alloc(32 << 20, 1); setTimeout(() => a, 600)',
    ]);
    const peak = peakWatcher(child.pid ?? 0, 50);
    await once(child, 'exit');
    const last = peak.last();
    peak.stop();
    expect(last).toBeGreaterThanOrEqual(32);
  });

  it('gives undefined for a process it never saw', () => {
    const peak = peakWatcher(2 ** 30);
    expect(peak.last()).toBeUndefined();
    peak.stop();
  });
});
