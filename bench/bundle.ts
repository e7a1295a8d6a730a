/**
 * A benchmark's entry bundled as the functions are (`FUNCTION_BUNDLE`), so what it times is the code
 * the image runs, not `tsx`'s transform of it.
 * @module
 */
import { join } from 'node:path';
import { build } from 'esbuild';
import { FUNCTION_BUNDLE, ROOT } from '../scripts/bundle-options.js';

/**
 * Bundles `entry` (relative to the repository) into `outfile`, minified as the functions are; with
 * `profiled`, identifiers stay readable and a source map goes beside it, so that a CPU profile names
 * functions and their files.
 */
export async function bundleAsShipped(
  entry: string,
  outfile: string,
  profiled = false,
): Promise<void> {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, entry)],
    outfile,
    ...FUNCTION_BUNDLE,
    ...(profiled
      ? { minifySyntax: true, minifyWhitespace: true, sourcemap: true }
      : { minify: true }),
  });
  if (result.errors.length > 0) throw new Error(`esbuild failed for ${entry}`);
}
