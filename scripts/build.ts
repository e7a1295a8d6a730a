/**
 * `npm run build`: one self-contained ESM bundle per function (functions/<name>/main.ts →
 * dist/<name>.mjs, with a source map and a metafile), then each bundle's size and its largest inputs.
 * The container image ships only dist/; nothing is resolved from node_modules at run time.
 * @module
 */
import { analyzeMetafile, build } from 'esbuild';
import type { Metafile } from 'esbuild';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The four functions; each has functions/<name>/main.ts. */
export const FUNCTIONS = [
  'reconcile-pool',
  'disk-gc-tick',
  'scale-validate',
  'scale-down-with',
] as const;
export type FunctionName = (typeof FUNCTIONS)[number];

/** Repository root (this file lives in scripts/). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Some dependencies (client-node's transitive CJS modules) call `require` for Node built-ins; an
 * ESM bundle has no `require`, so give it one.
 */
const BANNER =
  "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

/**
 * Optional native/peer modules that dependencies `require` inside try/catch (ws: bufferutil,
 * utf-8-validate; node-fetch: encoding). They are not installed, stay external, and are never
 * loaded; declaring them makes that explicit instead of esbuild's silent fallback.
 */
export const OPTIONAL_PEERS = ['bufferutil', 'utf-8-validate', 'encoding'] as const;

/** One built bundle. */
export interface BuiltBundle {
  readonly name: FunctionName;
  readonly file: string;
  readonly bytes: number;
  readonly metafile: Metafile;
}

/** Options of {@link buildBundles}. */
export interface BuildOptions {
  /** Output directory (default `<root>/dist`). */
  readonly outdir?: string;
  /** Print sizes and top contributors (default true). */
  readonly report?: boolean;
}

/** Builds every function bundle; rejects on any esbuild error (warnings are printed). */
export async function buildBundles(opts: BuildOptions = {}): Promise<BuiltBundle[]> {
  const outdir = opts.outdir ?? join(ROOT, 'dist');
  const out: BuiltBundle[] = [];
  // Sequential: the output is easier to read, and the whole build takes about a second.
  for (const name of FUNCTIONS) {
    const file = join(outdir, `${name}.mjs`);
    const result = await build({
      absWorkingDir: ROOT,
      entryPoints: [join(ROOT, 'functions', name, 'main.ts')],
      outfile: file,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      minify: true,
      sourcemap: true,
      metafile: true,
      legalComments: 'linked',
      banner: { js: BANNER },
      external: [...OPTIONAL_PEERS],
      logLevel: 'warning',
    });
    if (result.errors.length > 0) throw new Error(`esbuild failed for ${name}`);
    writeFileSync(join(outdir, `${name}.meta.json`), JSON.stringify(result.metafile));
    const output = Object.entries(result.metafile.outputs).find(([path]) => path.endsWith('.mjs'));
    if (output === undefined) throw new Error(`esbuild produced no .mjs for ${name}`);
    out.push({ name, file, bytes: output[1].bytes, metafile: result.metafile });
  }
  if (opts.report ?? true) {
    for (const b of out) {
      console.log(`${b.name.padEnd(16)} dist/${b.name}.mjs  ${(b.bytes / 1024).toFixed(1)} KiB`);
      console.log(await topContributors(b.metafile, 6));
    }
  }
  return out;
}

/** The `n` largest inputs of a bundle, as esbuild's analyzeMetafile prints them. */
async function topContributors(metafile: Metafile, n: number): Promise<string> {
  const text = await analyzeMetafile(metafile);
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  // The first line is the bundle itself; the rest are its inputs, largest first.
  return lines
    .slice(1, n + 1)
    .map((l) => `  ${l.trim()}`)
    .join('\n');
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  buildBundles().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
