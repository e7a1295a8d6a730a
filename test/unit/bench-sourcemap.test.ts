/**
 * The profile's source-map reader: base64 VLQ decoded as the format defines it, and a position in a
 * real esbuild bundle (minified whitespace, as benchmark 3 builds it) named by the file it came from.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeLines, decodeSegment, sourceNamer } from '../../bench/sourcemap.js';

const dir = mkdtempSync(join(tmpdir(), 'vmpool-sourcemap-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** 0-based line and column of the first `needle` in `text`. */
function positionOf(text: string, needle: string): [number, number] {
  const at = text.indexOf(needle);
  expect(at).toBeGreaterThanOrEqual(0);
  const before = text.slice(0, at).split('\n');
  return [before.length - 1, (before.at(-1) ?? '').length];
}

describe('decodeSegment', () => {
  it('decodes signs, continuation digits and several fields', () => {
    expect(decodeSegment('AAAA')).toEqual([0, 0, 0, 0]);
    expect(decodeSegment('C')).toEqual([1]);
    expect(decodeSegment('D')).toEqual([-1]);
    expect(decodeSegment('gB')).toEqual([16]);
    expect(decodeSegment('hB')).toEqual([-16]);
    expect(decodeSegment('2HQE')).toEqual([123, 8, 2]);
    expect(decodeSegment('2HwBE')).toEqual([123, 24, 2]);
  });

  it('refuses a character that is not a base64 digit', () => {
    expect(() => decodeSegment('A*A')).toThrow(/not a base64 VLQ digit/);
  });
});

describe('decodeLines', () => {
  it('carries the source index across lines and the column within one', () => {
    const lines = decodeLines('AAAA,KCAA;GAAA,EDAA');
    expect(lines).toEqual([
      { columns: [0, 5], sources: [0, 1] },
      { columns: [3, 5], sources: [1, 0] },
    ]);
  });
});

describe('sourceNamer', () => {
  it('names the source file of a function in a whitespace-minified bundle', async () => {
    writeFileSync(
      join(dir, 'alpha.ts'),
      'export function alpha(n: number): number { return n * 3 + 1; }\n',
    );
    writeFileSync(
      join(dir, 'beta.ts'),
      'export function beta(s: string): string { return s.repeat(2); }\n',
    );
    writeFileSync(
      join(dir, 'entry.ts'),
      "import { alpha } from './alpha.js';\nimport { beta } from './beta.js';\nconsole.log(alpha(2), beta('x'));\n",
    );
    const outfile = join(dir, 'out.mjs');
    await build({
      entryPoints: [join(dir, 'entry.ts')],
      outfile,
      bundle: true,
      format: 'esm',
      platform: 'node',
      minifyWhitespace: true,
      minifySyntax: true,
      sourcemap: true,
      logLevel: 'silent',
    });
    const text = readFileSync(outfile, 'utf8');
    const names = sourceNamer();
    const url = pathToFileURL(outfile).href;
    const [al, ac] = positionOf(text, 'function alpha');
    const [bl, bc] = positionOf(text, 'function beta');
    expect(names(url, al, ac)).toMatch(/alpha\.ts$/);
    expect(names(url, bl, bc)).toMatch(/beta\.ts$/);
    // A script with no map beside it is left to its own name.
    expect(names(pathToFileURL(join(dir, 'entry.ts')).href, 0, 0)).toBeUndefined();
    expect(names('node:internal/x', 0, 0)).toBeUndefined();
  });
});
