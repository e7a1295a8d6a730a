import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../local/controlplane/binaries.js';
import { quietOnClosedPipe } from './pipe.js';

function errno(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

describe('quietOnClosedPipe', () => {
  it('a reader gone (EPIPE) ends with 0 and says nothing; another write error ends with 1 and says it', () => {
    const stream = new EventEmitter();
    const exits: number[] = [];
    const said: string[] = [];
    quietOnClosedPipe(
      stream,
      (c) => exits.push(c),
      (l) => said.push(l),
    );
    stream.emit('error', errno('EPIPE', 'write EPIPE'));
    expect(exits).toEqual([0]);
    expect(said).toEqual([]);
    stream.emit('error', errno('EIO', 'write EIO'));
    expect(exits).toEqual([0, 1]);
    expect(said).toEqual(['error: write EIO']);
  });
});

describe('kubectl-vmpool with its output piped to a reader that has gone', () => {
  it('ends with status 0 and no stack trace (as `kubectl vmpool … | head` does)', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'plugin/bin.ts', '--help'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reader is gone before the plugin writes a line.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((ok) => child.on('exit', ok));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  }, 30_000);
});
