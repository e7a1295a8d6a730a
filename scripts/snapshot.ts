/**
 * `npm run build -- --snapshot`: a V8 startup snapshot of every function (dist/<function>.blob),
 * started as the image starts it (scripts/image-start.ts): `node --max-semi-space-size=4
 * --use-openssl-ca --snapshot-blob dist/<function>.blob`. It holds the heap after every module of the
 * function was evaluated, so a start skips parsing, compiling and initializing them (benchmark 6
 * measures what that saves); the function's own main.ts runs when the snapshot is resumed
 * (startFunction in shared/runtime).
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
import type { FunctionName } from './build.js';
import { OPTIONAL_PEERS, ROOT, zodEnglishOnly } from './bundle-options.js';
import { RUNTIME_FLAGS } from './image-start.js';

export { RUNTIME_FLAGS } from './image-start.js';

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
function withoutClientNode(name: FunctionName): Plugin {
  return {
    name: 'without-client-node',
    setup(b) {
      b.onResolve({ filter: /^@kubernetes\/client-node(\/|$)/ }, (args) => ({
        path: args.path,
        namespace: 'left-out',
      }));
      b.onLoad({ filter: /.*/, namespace: 'left-out' }, () => ({
        contents: `export class KubeConfig {
          constructor() {
            throw new Error('this kubeconfig needs client-node (exec plugins, auth providers, several files or proxies), which the snapshot start leaves out: run dist/${name}.mjs instead');
          }
        }`,
      }));
    },
  };
}

/** A built snapshot. */
export interface BuiltSnapshot {
  readonly blob: string;
  readonly bytes: number;
}

/**
 * Bundles functions/<name>/main.ts as CommonJS, with the YAML parser a kubeconfig file needs
 * evaluated too, and builds dist/<name>.blob from it.
 */
export async function buildSnapshot(outdir: string, name: FunctionName): Promise<BuiltSnapshot> {
  const script = join(outdir, `${name}.snapshot.cjs`);
  const blob = join(outdir, `${name}.blob`);
  const result = await build({
    absWorkingDir: ROOT,
    stdin: {
      contents: `import 'yaml';\nimport './functions/${name}/main.ts';\n`,
      resolveDir: ROOT,
      sourcefile: `${name}.snapshot.ts`,
      loader: 'ts',
    },
    outfile: script,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    minify: true,
    banner: { js: LAZY_BUILTINS },
    external: [...OPTIONAL_PEERS],
    plugins: [zodEnglishOnly, withoutClientNode(name)],
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error(`esbuild failed for the snapshot of ${name}`);
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
      `node --build-snapshot failed for ${name} (${String(run.status)}): ${err.join('\n').trim()}`,
    );
  }
  return { blob, bytes: statSync(blob).size };
}
