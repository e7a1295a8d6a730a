/**
 * The kubectl plugin as one executable file: plugin/bin.ts → dist/kubectl-vmpool.mjs, and
 * dist/bin/kubectl-vmpool linking to it, the name kubectl looks for on PATH.
 * @module
 */
import { chmodSync, mkdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

/** Name of the plugin executable kubectl looks for on PATH. */
export const PLUGIN = 'kubectl-vmpool';

/** Bundles the plugin into `outdir`; resolves with the file written. */
export async function buildPlugin(root: string, outdir: string, banner: string): Promise<string> {
  const file = join(outdir, `${PLUGIN}.mjs`);
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'plugin', 'bin.ts')],
    outfile: file,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    minify: true,
    legalComments: 'eof',
    banner: { js: `#!/usr/bin/env node\n${banner}` },
    external: ['bufferutil', 'utf-8-validate', 'encoding'],
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error(`esbuild failed for ${PLUGIN}`);
  chmodSync(file, 0o755);
  // kubectl finds plugins by name on PATH: dist/bin/kubectl-vmpool is what to put there.
  const bin = join(outdir, 'bin');
  mkdirSync(bin, { recursive: true });
  rmSync(join(bin, PLUGIN), { force: true });
  symlinkSync(join('..', `${PLUGIN}.mjs`), join(bin, PLUGIN));
  console.log(
    `${PLUGIN.padEnd(16)} dist/${PLUGIN}.mjs  ${(statSync(file).size / 1024).toFixed(1)} KiB`,
  );
  return file;
}
