/**
 * A tick's failure report gives the peak RSS read while the process ran, not an error of its own
 * once the process (and its /proc entry) is gone.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
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

  it('keeps the peak once the process is a zombie (its status has no memory lines)', async () => {
    // sh execs sleep, which never reaps the node it started: node stays a zombie until sleep ends.
    const sh = spawn('sh', [
      '-c',
      `"${process.execPath}" -e 'const a = Buffer.alloc(32 << 20, 1); setTimeout(() => a, 400)' & echo $!; exec sleep 3`,
    ]);
    const [chunk] = (await once(sh.stdout, 'data')) as [Buffer];
    const pid = Number(chunk.toString().trim());
    const peak = peakWatcher(pid, 50);
    const zombie = (): boolean => /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
    for (let i = 0; i < 100 && !zombie(); i++) await new Promise((r) => setTimeout(r, 50));
    expect(zombie()).toBe(true);
    const last = peak.last();
    peak.stop();
    sh.kill('SIGKILL');
    expect(last).toBeGreaterThanOrEqual(32);
  });

  it('gives undefined for a process it never saw', () => {
    const peak = peakWatcher(2 ** 30);
    expect(peak.last()).toBeUndefined();
    peak.stop();
  });
});
