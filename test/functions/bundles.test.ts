/**
 * The shipped artefacts: builds the four esbuild bundles (as `npm run build` does, into a temp dir),
 * starts each as its own `node` process the way the container does (from its V8 startup snapshot,
 * scripts/image-start.ts, and from the plain bundle), and measures the cold start
 * (spawn → first answered /health/liveness). The two HTTPS functions serve TLS, as in the cluster.
 * No API server is needed: the kubeconfig points at a closed port and health never calls it.
 * @module
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildBundles,
  bundledPackageDirs,
  FUNCTIONS,
  NOTICES_FILE,
  OPTIONAL_PEERS,
  ROOT,
} from '../../scripts/build.js';
import type { BuiltBundle, FunctionName } from '../../scripts/build.js';
import { RUNTIME_FLAGS, imageStart } from '../../scripts/image-start.js';
import { buildSnapshot } from '../../scripts/snapshot.js';
import { mintCa, mintLeaf } from '../../local/controlplane/certs.js';

const HTTPS: readonly FunctionName[] = ['scale-validate', 'scale-down-with'];

let dir = '';
let bundles: BuiltBundle[] = [];
let tls: { cert: string; key: string; ca: string } | undefined;
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vmpool-bundles-'));
  bundles = await buildBundles({ outdir: join(dir, 'dist'), report: false });
  writeFileSync(
    join(dir, 'kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: none, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
      'users: [{name: none, user: {token: unused}}]',
      'contexts: [{name: none, context: {cluster: none, user: none}}]',
      'current-context: none',
      '',
    ].join('\n'),
  );
  const ca = mintCa(dir, 'ca', 'vmpool-bundles-test-ca');
  const leaf = mintLeaf(dir, 'serving', ca, {
    cn: 'localhost',
    sans: ['127.0.0.1', 'localhost'],
    usage: 'server',
  });
  tls = { cert: leaf.certPath, key: leaf.keyPath, ca: ca.certPem };
}, 60_000);

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** GET over HTTP or HTTPS (trusting the test CA); resolves with the status code. */
function get(url: string, ca: string): Promise<number> {
  if (url.startsWith('http:'))
    return fetch(url).then(async (r) => {
      await r.arrayBuffer();
      return r.status;
    });
  return new Promise((ok, fail) => {
    const req = request(url, { ca, method: 'GET' }, (res) => {
      res.resume();
      res.on('end', () => {
        ok(res.statusCode ?? 0);
      });
    });
    req.on('error', fail);
    req.end();
  });
}

/** Resolves with the port from the function's `<name> listening` log line. */
function listeningPort(child: ChildProcess, name: string): Promise<number> {
  return new Promise((ok, fail) => {
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('exit', (code) => {
      fail(new Error(`${name} exited with ${String(code)} before listening: ${stderr}`));
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      try {
        const rec = JSON.parse(line) as { msg?: string; port?: number };
        if (rec.msg === `${name} listening` && typeof rec.port === 'number') ok(rec.port);
      } catch {
        // not a log record
      }
    });
  });
}

/** Resident set size of a process in MB (Linux /proc), or NaN elsewhere. */
async function rssMb(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return kb === undefined ? Number.NaN : Number(kb) / 1024;
}

describe('function bundles', () => {
  it('builds one self-contained bundle per function', () => {
    expect(bundles.map((b) => b.name)).toEqual([...FUNCTIONS]);
    const optional = new Set<string>(OPTIONAL_PEERS);
    for (const b of bundles) {
      expect(statSync(b.file).size).toBe(b.bytes);
      expect(statSync(`${b.file}.map`).size).toBeGreaterThan(0);
      // Everything is bundled: only Node built-ins (and optional peers that dependencies load in a
      // try/catch) stay external, because the image has no node_modules.
      const external = Object.values(b.metafile.outputs)
        .flatMap((o) => o.imports)
        .filter((i) => i.external && !isBuiltin(i.path) && !optional.has(i.path))
        .map((i) => i.path);
      expect(external, `${b.name} imports packages at run time`).toEqual([]);
    }
  });

  it('ships the licence text of every bundled npm package, in the image too', () => {
    const notices = readFileSync(join(dir, 'dist', NOTICES_FILE), 'utf8');
    const dirs = [...new Set(bundles.flatMap((b) => bundledPackageDirs(b.metafile)))];
    expect(dirs.length).toBeGreaterThan(10);
    for (const d of dirs) {
      const pkg = JSON.parse(readFileSync(join(ROOT, d, 'package.json'), 'utf8')) as {
        name: string;
        version: string;
      };
      expect(notices).toContain(`==== ${pkg.name} ${pkg.version} (`);
    }
    // A licence text itself, not just a name: hono's MIT licence and client-node's Apache licence.
    expect(notices).toMatch(/==== hono [^\n]*\n\n--- LICENSE ---\nMIT License/);
    expect(notices).toMatch(/==== @kubernetes\/client-node [\s\S]*?Apache License/);
    // The runtime stage of the image copies it next to the bundles; the build context never
    // carries knative/ (certificate keys of the plain-TLS path live there).
    const containerfile = readFileSync(join(ROOT, 'Containerfile'), 'utf8');
    const runtime = containerfile.slice(containerfile.lastIndexOf('\nFROM '));
    expect(runtime).toMatch(
      new RegExp(`^COPY --from=build .*/src/dist/${NOTICES_FILE} /app/dist/$`, 'm'),
    );
    const ignored = readFileSync(join(ROOT, '.containerignore'), 'utf8').split('\n');
    expect(ignored).toContain('knative/');
  });

  it('declares as runtime dependencies exactly packages the bundles carry (tools are dev dependencies)', () => {
    const nameOf = (d: string): string =>
      (JSON.parse(readFileSync(join(ROOT, d, 'package.json'), 'utf8')) as { name: string }).name;
    const bundled = new Set(bundles.flatMap((b) => bundledPackageDirs(b.metafile)).map(nameOf));
    const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    for (const dep of Object.keys(dependencies)) expect(bundled, dep).toContain(dep);
  });

  it.each(FUNCTIONS.flatMap((n) => [[n, 'snapshot'] as const, [n, 'bundle'] as const]))(
    '%s starts from its %s as the image starts it and answers /health/liveness',
    async (name, from) => {
      const https = HTTPS.includes(name);
      // The image's command, run from the image's layout (dist/ under the working directory).
      const { command, args } = imageStart(name);
      if (from === 'snapshot') await buildSnapshot(join(dir, 'dist'), name);
      const t0 = performance.now();
      const child = spawn(
        process.execPath,
        [...command.slice(1), ...(from === 'snapshot' ? args : [`dist/${name}.mjs`])],
        {
          cwd: dir,
          env: {
            PATH: process.env.PATH,
            PORT: '0',
            KUBECONFIG: join(dir, 'kubeconfig'),
            LOG_LEVEL: 'info',
            ...(https ? { TLS_CERT_FILE: tls!.cert, TLS_KEY_FILE: tls!.key } : {}),
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      children.push(child);
      const port = await listeningPort(child, name);
      const url = `${https ? 'https' : 'http'}://127.0.0.1:${port}/health/liveness`;
      const status = await get(url, tls!.ca);
      const ms = performance.now() - t0;
      const rss = await rssMb(child.pid!);
      console.log(`[cold-start] ${name} ${from} ${ms.toFixed(0)} ms, rss ${rss.toFixed(1)} MB`);
      expect(status).toBe(200);
      expect(await get(url.replace('liveness', 'readiness'), tls!.ca)).toBe(200);

      const exited = new Promise<number | null>((ok) => child.once('exit', ok));
      child.kill('SIGTERM');
      // SIGTERM drains and exits on its own (a clean 0), as the kubelet expects.
      expect(await exited).toBe(0);
    },
    30_000,
  );

  it('reconcile-pool starts from its V8 startup snapshot, answers, drains on SIGTERM, and says what to run for a kubeconfig it leaves to client-node', async () => {
    const { blob } = await buildSnapshot(join(dir, 'dist'), 'reconcile-pool');
    const start = (kubeconfig: string) => {
      const child = spawn(process.execPath, [...RUNTIME_FLAGS, '--snapshot-blob', blob], {
        cwd: dir,
        env: { PATH: process.env.PATH, PORT: '0', KUBECONFIG: kubeconfig, LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      return child;
    };
    const child = start(join(dir, 'kubeconfig'));
    const port = await listeningPort(child, 'reconcile-pool');
    expect(await get(`http://127.0.0.1:${port}/health/liveness`, tls!.ca)).toBe(200);
    // A malformed event gets its 400 from code that ran when the snapshot was built.
    const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(400);
    const exited = new Promise<number | null>((ok) => child.once('exit', ok));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);

    // Two kubeconfig files need client-node's merge, which the snapshot leaves out.
    const exotic = start(`${join(dir, 'kubeconfig')}:${join(dir, 'kubeconfig')}`);
    let out = '';
    exotic.stdout.on('data', (b: Buffer) => (out += b.toString()));
    const code = await new Promise<number | null>((ok) => exotic.once('exit', ok));
    expect(code).toBe(1);
    expect(out).toContain('run dist/reconcile-pool.mjs instead');
  }, 60_000);
});
