/**
 * What every esbuild bundle of vmpool shares (the functions' and the start snapshot's): the
 * repository root, the require banner, optional peers left external, zod in English only.
 * @module
 */
import type { BuildOptions, Plugin } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (this file lives in scripts/). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Some dependencies (client-node's transitive CJS modules) call `require` for Node built-ins; an
 * ESM bundle has no `require`, so give it one.
 */
export const BANNER =
  "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

/**
 * Optional native/peer modules that dependencies `require` inside try/catch (ws: bufferutil,
 * utf-8-validate; node-fetch: encoding). They are not installed, stay external, and are never
 * loaded; declaring them makes that explicit instead of esbuild's silent fallback.
 */
export const OPTIONAL_PEERS = ['bufferutil', 'utf-8-validate', 'encoding'] as const;

/**
 * zod re-exports every locale (`z.locales`, ~60 languages, two thirds of zod's bytes in a bundle)
 * from a namespace object, which tree shaking cannot split. vmpool speaks English only (zod sets it
 * by default from its own en.js, which stays); every start paid for parsing and compiling the rest.
 */
export const zodEnglishOnly: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]/.test(args.importer)
        ? {
            path: 'english-only',
            namespace: 'zod-locales',
            pluginData: join(dirname(args.importer), '..', 'locales', 'en.js'),
          }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(String(args.pluginData))};`,
      resolveDir: ROOT,
    }));
  },
};

/**
 * What a function bundle is built with besides its entry, output and minification: scripts/build.ts
 * builds the functions with it, and the plan() benchmark builds itself with it (as shipped).
 */
export const FUNCTION_BUNDLE = {
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  banner: { js: BANNER },
  external: [...OPTIONAL_PEERS],
  plugins: [zodEnglishOnly],
  logLevel: 'warning',
} as const satisfies BuildOptions;
