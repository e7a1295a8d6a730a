/**
 * README.md's quick start, followed as written: its blocks marked `<!-- quickstart: NAME -->`. The
 * `start` block is `npm install && npm start`; the test runs that `npm start` (the install is what
 * CI's `npm ci` already did), then runs the `try` block with bash in another shell, as the README
 * says: with the two `export` lines `npm start` printed in place of the block's placeholders, every
 * other line as written. Every command must exit 0, and the pool must end where the README says.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import type { NpmStart } from './npm-start.js';
import { npmStart, stoppedCleanly } from './npm-start.js';

/** The README's blocks marked `<!-- quickstart: NAME -->`, by name. */
function quickstartBlocks(): Map<string, string> {
  const text = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const blocks = new Map<string, string>();
  for (const m of text.matchAll(/<!-- quickstart: ([a-z-]+) -->\n```sh\n([\s\S]*?)```/g))
    blocks.set(m[1] ?? '', m[2] ?? '');
  return blocks;
}

/** The lines of a block that are commands (comments after `#` dropped, continuations joined). */
function commands(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((l) => l.replace(/\s{2,}#.*$/, '').trim())
    .filter((l) => l !== '');
}

/**
 * Bash running `script`, `-e` so the first failing command ends it (`-x`: each command echoed
 * before its output, for the transcript); output and exit code.
 */
function bash(script: string, trace = false): Promise<{ code: number; out: string }> {
  return new Promise((ok, fail) => {
    const child = spawn('bash', ['-euo', 'pipefail', ...(trace ? ['-x'] : []), '-c', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? REPO_ROOT },
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      ok({ code: code ?? -1, out });
    });
  });
}

let running: NpmStart | undefined;
afterEach(async () => {
  await running?.stop().catch(() => undefined);
  running = undefined;
});

describe("README.md's quick start, as written", () => {
  it('has a start block (npm install, npm start) and a try block of kubectl commands', () => {
    const blocks = quickstartBlocks();
    expect([...blocks.keys()]).toEqual(['start', 'try']);
    expect(commands(blocks.get('start') ?? '')).toEqual(['npm install && npm start']);
    const tried = commands(blocks.get('try') ?? '');
    expect(tried.slice(0, 2)).toEqual([
      'export KUBECONFIG=<printed path>',
      'export PATH=<printed directories>:$PATH',
    ]);
    expect(tried.length).toBeGreaterThan(4);
  });

  it('npm start, then every command of the try block exits 0; the pool ends at 4 replicas', async () => {
    const blocks = quickstartBlocks();
    const run = (running = npmStart([]));
    await run.waitFor(/vmpool is running/, 240_000);
    // The placeholders stand for what npm start printed: its own two export lines.
    const printed = (name: string): string => {
      const line = run.lines.find((l) => l.trimStart().startsWith(`export ${name}=`));
      if (line === undefined) throw new Error(`npm start printed no export ${name}=`);
      return line.trim().replace(/\s+#.*$/, '');
    };
    const script = (blocks.get('try') ?? '')
      .replace(/^export KUBECONFIG=<printed path>.*$/m, printed('KUBECONFIG'))
      .replace(/^export PATH=<printed directories>.*$/m, printed('PATH'));
    expect(script).not.toContain('<printed');

    const { code, out } = await bash(script, true);
    console.error(`[quickstart] transcript:\n${out}`);
    expect(code, out).toBe(0);
    // What the README says of it: the get lists the sample pool, the scaledownwith answer lists its
    // target as removed.
    expect(out).toMatch(/virtualmachinepool\.virtualization\.deckhouse\.io\/runners/);
    expect(out).toMatch(/removed/);
    expect(out).toMatch(/virtualmachine\.virtualization\.deckhouse\.io "[a-z0-9-]+" deleted/);

    const spec = await bash(
      `${printed('KUBECONFIG')}\n${printed('PATH')}\nkubectl get virtualmachinepool/runners -n vmpool-demo -o jsonpath='{.spec.replicas}'`,
    );
    expect(spec.code, spec.out).toBe(0);
    expect(spec.out.trim()).toBe('4');

    const ended = await run.stop();
    running = undefined;
    expect(stoppedCleanly(run, ended)).toBe(true);
  }, 300_000);
});
