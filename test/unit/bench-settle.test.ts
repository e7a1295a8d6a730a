/**
 * The bench's wait for a quiet control plane (bench/objects.ts `settle`), on real processes: an idle
 * one is quiet after two quiet seconds, one that keeps a CPU busy is not, and the wait gives up at
 * its timeout instead of hanging a benchmark.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { settle, settledLine } from '../../bench/objects.js';

const children: ChildProcess[] = [];
const start = (code: string): number => {
  const child = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
  children.push(child);
  return child.pid ?? 0;
};

afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

describe('settle', () => {
  it('finds an idle process quiet after two quiet seconds', async () => {
    const pid = start('setTimeout(() => {}, 60_000)');
    const s = await settle([pid], 100, 10_000);
    expect(s.quiet).toBe(true);
    expect(s.msPerS).toBeLessThan(100);
    expect(s.waitedMs).toBeGreaterThanOrEqual(2_000);
    expect(settledLine(s, 'the next window')).toMatch(/^control plane quiet \(\d+ CPU ms\/s\)/);
  });

  it('gives up on a process that keeps a CPU busy, at its timeout, and says so', async () => {
    const pid = start('for (;;) {}');
    const s = await settle([pid], 100, 3_000);
    expect(s.quiet).toBe(false);
    expect(s.msPerS).toBeGreaterThan(100);
    expect(s.waitedMs).toBeLessThan(5_000);
    expect(settledLine(s, 'x')).toContain('still busy');
  });
});
