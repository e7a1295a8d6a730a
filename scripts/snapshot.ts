/**
 * `npm run build -- --snapshot`: a V8 startup snapshot of reconcile-pool (dist/reconcile-pool.blob),
 * started with `node --max-semi-space-size=1 --snapshot-blob dist/reconcile-pool.blob`. It holds the
 * heap after every module of the function was evaluated, so a start skips parsing, compiling and
 * initializing them (benchmark 6 measures what that saves).
 *
 * A blob only loads in the node binary that built it, with the same V8 flags, so it is built where
 * it runs (the image's build stage copies its own node into the runtime stage). Node 20's snapshot
 * builder cannot load node:http, node:https, node:tls or node:net (their module code uses array
 * methods the builder lacks) nor the web globals (undici needs WebAssembly): those are required
 * lazily, on their first use after the start, through the banner below.
 * @module
 */
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Plugin } from 'esbuild';
import { OPTIONAL_PEERS, ROOT, zodEnglishOnly } from './bundle-options.js';

/** The flags every function runs with (Containerfile, knative/); a blob must be built with them. */
export const RUNTIME_FLAGS = ['--max-semi-space-size=1'] as const;

/**
 * CommonJS banner of the snapshot bundle: the network modules are proxies that require the real
 * module at the first property read (esbuild reads imports as `mod.name` at each use).
 */
const LAZY_BUILTINS = `{
  const lazy = new Set(['http', 'https', 'tls', 'net', 'http2']);
  const real = require;
  require = (id) => {
    const name = id.startsWith('node:') ? id.slice(5) : id;
    if (!lazy.has(name)) return real(id);
    let m;
    const load = () => (m ??= real(name));
    return new Proxy({}, {
      get: (_, k) => (k === '__esModule' ? undefined : load()[k]),
      has: (_, k) => k in load(),
      ownKeys: () => Reflect.ownKeys(load()),
      getOwnPropertyDescriptor: (_, k) => {
        const d = Reflect.getOwnPropertyDescriptor(load(), k);
        return d && { ...d, configurable: true };
      },
    });
  };
}`;

/**
 * client-node's KubeConfig, which only exotic kubeconfigs need (exec plugins, several files, …), is
 * left out of the snapshot: it would hold 4 MiB of every start's heap for a path in-cluster
 * credentials never take. A snapshot start that needs it says what to run instead.
 */
const withoutClientNode: Plugin = {
  name: 'without-client-node',
  setup(b) {
    b.onResolve({ filter: /^@kubernetes\/client-node(\/|$)/ }, (args) => ({
      path: args.path,
      namespace: 'left-out',
    }));
    b.onLoad({ filter: /.*/, namespace: 'left-out' }, () => ({
      contents: `export class KubeConfig {
        constructor() {
          throw new Error('this kubeconfig needs client-node (exec plugins, auth providers, several files or proxies), which the snapshot start leaves out: run dist/reconcile-pool.mjs instead');
        }
      }`,
    }));
  },
};

/** A built snapshot. */
export interface BuiltSnapshot {
  readonly blob: string;
  readonly bytes: number;
}

/** Bundles functions/reconcile-pool/snapshot.ts as CommonJS and builds the blob from it. */
export async function buildSnapshot(outdir: string): Promise<BuiltSnapshot> {
  const script = join(outdir, 'reconcile-pool.snapshot.cjs');
  const blob = join(outdir, 'reconcile-pool.blob');
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, 'functions', 'reconcile-pool', 'snapshot.ts')],
    outfile: script,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    minify: true,
    banner: { js: LAZY_BUILTINS },
    external: [...OPTIONAL_PEERS],
    plugins: [zodEnglishOnly, withoutClientNode],
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error('esbuild failed for the snapshot');
  const run = spawnSync(
    process.execPath,
    [...RUNTIME_FLAGS, '--snapshot-blob', blob, '--build-snapshot', script],
    { cwd: outdir, encoding: 'utf8', env: { PATH: process.env.PATH } },
  );
  if (run.status !== 0) {
    // The builder's warnings about modules "not yet fully verified" are noise; the error is last.
    const err = run.stderr
      .split('\n')
      .filter((l) => !/not yet fully verified|may still work|issue tracker|trace-warnings/.test(l));
    throw new Error(
      `node --build-snapshot failed (${String(run.status)}): ${err.join('\n').trim()}`,
    );
  }
  return { blob, bytes: statSync(blob).size };
}
