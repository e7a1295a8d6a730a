import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ChildExited,
  PORT_ATTEMPTS,
  onFreePorts,
  portTaken,
  startProcess,
  waitFor,
} from './process.js';

const taken = new ChildExited(
  'kube-apiserver',
  1,
  'kube-apiserver /readyz',
  'E1202 run.go:72] "command failed" err="failed to create listener: failed to listen on ' +
    '127.0.0.1:38341: listen tcp 127.0.0.1:38341: bind: address already in use"',
);

describe('portTaken', () => {
  it('is a child that exited because its port was bound by another process', () => {
    expect(portTaken(taken)).toBe(true);
  });
  it('is not a timeout, another exit, or something that is not an Error', () => {
    expect(
      portTaken(
        new Error('timed out after 60000 ms waiting for etcd /health\naddress already in use'),
      ),
    ).toBe(false);
    expect(portTaken(new ChildExited('etcd', 1, 'etcd /health', 'invalid URL'))).toBe(false);
    expect(portTaken(taken.message)).toBe(false);
  });
  it('reads only the log of the start that failed, not an earlier one in the same file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmpool-ports-'));
    try {
      const logPath = join(dir, 'child.log');
      // An earlier start into the same file lost its port; this one fails for another reason.
      writeFileSync(logPath, 'listen tcp 127.0.0.1:1: bind: address already in use\n');
      const proc = startProcess({
        name: 'child',
        bin: 'sh',
        args: ['-c', 'echo invalid URL; exit 1'],
        logPath,
        watchdog: false,
      });
      const err: unknown = await waitFor('the child', () => Promise.resolve(false), {
        timeoutMs: 10_000,
        proc,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChildExited);
      expect((err as ChildExited).log).toContain('invalid URL');
      expect(portTaken(err)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('onFreePorts', () => {
  /** Ports 1, 2, 3, … in the order asked for. */
  const counter = () => {
    let n = 0;
    return () => Promise.resolve(++n);
  };

  it('runs again on fresh ports after a port was taken, and says which were given up', async () => {
    const seen: (readonly number[])[] = [];
    const retried: (readonly number[])[] = [];
    const out = await onFreePorts(
      2,
      (ports) => {
        seen.push(ports);
        return seen.length === 1 ? Promise.reject(taken) : Promise.resolve('up');
      },
      { port: counter(), retried: (p) => retried.push(p) },
    );
    expect(out).toBe('up');
    expect(seen).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(retried).toEqual([[1, 2]]);
  });

  /** A run that always fails with `err`, and how many times it ran. */
  const failing = (err: Error) => {
    const calls = { runs: 0 };
    const run = () => {
      calls.runs++;
      return Promise.reject(err);
    };
    return { run, calls };
  };

  it(`gives up after ${String(PORT_ATTEMPTS)} attempts with the last failure`, async () => {
    const { run, calls } = failing(taken);
    await expect(onFreePorts(1, run, { port: counter() })).rejects.toBe(taken);
    expect(calls.runs).toBe(PORT_ATTEMPTS);
  });

  it('throws any other failure at once', async () => {
    const other = new ChildExited('etcd', 1, 'etcd /health', 'invalid URL');
    const { run, calls } = failing(other);
    await expect(onFreePorts(1, run, { port: counter() })).rejects.toBe(other);
    expect(calls.runs).toBe(1);
  });
});
