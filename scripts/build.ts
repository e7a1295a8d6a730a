/**
 * `npm run build`: one self-contained ESM bundle per function (functions/<name>/main.ts →
 * dist/<name>.mjs, with a source map and a metafile), the licence texts of every npm package the
 * bundles contain (dist/THIRD-PARTY-NOTICES.txt), then each bundle's size and its largest inputs.
 * The container image ships only dist/; nothing is resolved from node_modules at run time.
 * @module
 */
import { build } from 'esbuild';
import type { Metafile } from 'esbuild';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildPlugin } from './build-plugin.js';
import { BANNER, FUNCTION_BUNDLE, ROOT } from './bundle-options.js';

/** The four functions; each has functions/<name>/main.ts. */
export const FUNCTIONS = [
  'reconcile-pool',
  'disk-gc-tick',
  'scale-validate',
  'scale-down-with',
] as const;
export type FunctionName = (typeof FUNCTIONS)[number];

export { BANNER, OPTIONAL_PEERS, ROOT, zodEnglishOnly } from './bundle-options.js';

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
      entryPoints: { [name]: join(ROOT, 'functions', name, 'main.ts') },
      outdir,
      // What only some starts need (client-node for exotic kubeconfigs, a YAML parser) goes to
      // chunks that are read when first imported, not at every start.
      splitting: true,
      chunkNames: 'chunks/[name]-[hash]',
      outExtension: { '.js': '.mjs' },
      ...FUNCTION_BUNDLE,
      minify: true,
      sourcemap: true,
      metafile: true,
      // Legal comments stay in the bundle itself (none of today's inputs has one); the licences
      // that redistribution needs are the packages' licence files, in NOTICES_FILE.
      legalComments: 'eof',
    });
    if (result.errors.length > 0) throw new Error(`esbuild failed for ${name}`);
    writeFileSync(join(outdir, `${name}.meta.json`), JSON.stringify(result.metafile));
    const output = Object.entries(result.metafile.outputs).find(([path]) =>
      path.endsWith(`${name}.mjs`),
    );
    if (output === undefined) throw new Error(`esbuild produced no .mjs for ${name}`);
    out.push({ name, file, bytes: output[1].bytes, metafile: result.metafile });
  }
  const packages = [...new Set(out.flatMap((b) => bundledPackageDirs(b.metafile)))].sort();
  writeFileSync(join(outdir, NOTICES_FILE), thirdPartyNotices(packages));
  if (opts.report ?? true) {
    for (const b of out) {
      console.log(`${b.name.padEnd(16)} dist/${b.name}.mjs  ${(b.bytes / 1024).toFixed(1)} KiB`);
      console.log(topContributors(b, 6));
    }
  }
  return out;
}

/**
 * The file next to the bundles with the licence of every npm package they contain: the bundles are
 * redistributed in the image, and most of these licences (MIT, ISC, Apache-2.0) require their text
 * to go along.
 */
export const NOTICES_FILE = 'THIRD-PARTY-NOTICES.txt';

/** Directories (relative to the repository root) of the npm packages whose files a bundle contains. */
export function bundledPackageDirs(metafile: Metafile): string[] {
  const marker = 'node_modules/';
  const dirs = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const at = input.lastIndexOf(marker);
    if (at < 0) continue;
    const [first = '', second = ''] = input.slice(at + marker.length).split('/');
    dirs.add(
      `${input.slice(0, at)}${marker}${first.startsWith('@') ? `${first}/${second}` : first}`,
    );
  }
  return [...dirs].sort();
}

const LICENCE_FILE = /^(licen[cs]e|copying|notice)(\.|-|$)/i;

/**
 * The notices text: per package its name, version and declared licence, then the text of its
 * LICENSE/LICENCE/COPYING/NOTICE files; a package that ships none is named as such.
 */
export function thirdPartyNotices(packageDirs: readonly string[], root: string = ROOT): string {
  const parts = [
    'The vmpool bundles (dist/*.mjs) contain code of these npm packages, under these licences.\n',
  ];
  for (const dir of packageDirs) {
    const abs = join(root, dir);
    const pkg = JSON.parse(readFileSync(join(abs, 'package.json'), 'utf8')) as {
      name?: string;
      version?: string;
      license?: string;
    };
    parts.push(
      `\n==== ${pkg.name ?? dir} ${pkg.version ?? ''} (${pkg.license ?? 'licence not declared'}) ====\n`,
    );
    const files = existsSync(abs)
      ? readdirSync(abs)
          .filter((f) => LICENCE_FILE.test(f))
          .sort()
      : [];
    if (files.length === 0)
      parts.push(`The package ships no licence file; it declares ${pkg.license ?? 'none'}.\n`);
    for (const f of files)
      parts.push(`\n--- ${f} ---\n${readFileSync(join(abs, f), 'utf8').trimEnd()}\n`);
  }
  return parts.join('');
}

/** The `n` largest inputs of a bundle's entry file (what every start loads), with their share. */
function topContributors(b: BuiltBundle, n: number): string {
  const out = b.metafile.outputs[relative(ROOT, b.file)];
  const inputs = Object.entries(out?.inputs ?? {})
    .map(([path, i]) => ({ path, bytes: i.bytesInOutput }))
    .sort((x, y) => y.bytes - x.bytes)
    .slice(0, n);
  return inputs
    .map(
      (i) =>
        `  ├ ${i.path.padEnd(70)} ${(i.bytes / 1024).toFixed(1).padStart(7)} KiB ${((100 * i.bytes) / b.bytes).toFixed(1).padStart(5)}%`,
    )
    .join('\n');
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  buildBundles()
    .then(() => buildPlugin(ROOT, join(ROOT, 'dist'), BANNER))
    .then(async () => {
      if (!process.argv.includes('--snapshot')) return;
      const { buildSnapshot } = await import('./snapshot.js');
      for (const name of FUNCTIONS) {
        const s = await buildSnapshot(join(ROOT, 'dist'), name);
        console.log(
          `${name.padEnd(16)} ${relative(ROOT, s.blob)}  ${(s.bytes / 2 ** 20).toFixed(1)} MiB`,
        );
      }
    })
    .catch((err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exitCode = 1;
    });
}
