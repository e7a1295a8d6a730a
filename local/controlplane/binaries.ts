/**
 * Locates the control-plane binaries, building them through build.sh on first use. Never returns
 * without them: a missing binary must fail the run loudly instead of skipping the tests.
 * @module
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Directory of this module: build.sh and the Go modules live beside it. */
export const CONTROLPLANE_DIR = dirname(fileURLToPath(import.meta.url));
/** Repository root (two levels up), to resolve fixtures without absolute paths. */
export const REPO_ROOT = resolve(CONTROLPLANE_DIR, '..', '..');

/** Parts build.sh knows. */
export type Part = 'k8s' | 'knative';

/** Cache root shared with build.sh (same precedence of variables). */
export function cacheRoot(): string {
  const home = process.env.HOME ?? '/tmp';
  return (
    process.env.VMPOOL_CACHE_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(home, '.cache'), 'vmpool')
  );
}

const REQUIRED: Record<Part, string[]> = {
  k8s: ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl'],
  knative: ['apiserver_receive_adapter'],
};

/**
 * Runs build.sh for `part` (a no-op when cached) and returns the bin directory it prints as
 * `<part>=<dir>`. Its progress goes to our stderr, or line by line to `onLine`.
 */
export async function ensureBinaries(part: Part, onLine?: (line: string) => void): Promise<string> {
  const script = join(CONTROLPLANE_DIR, 'build.sh');
  const out = await new Promise<string>((ok, fail) => {
    const child = spawn('bash', [script, part], {
      stdio: ['ignore', 'pipe', onLine === undefined ? 'inherit' : 'pipe'],
    });
    let buf = '';
    child.stdout?.on('data', (d: Buffer) => (buf += d.toString()));
    if (onLine !== undefined && child.stderr !== null)
      createInterface({ input: child.stderr }).on('line', onLine);
    child.on('error', fail);
    child.on('exit', (code) => {
      if (code === 0) ok(buf);
      else fail(new Error(`build.sh ${part} failed with exit code ${code ?? 'signal'}`));
    });
  });
  const line = out.split('\n').find((l) => l.startsWith(`${part}=`));
  if (line === undefined)
    throw new Error(`build.sh ${part} printed no "${part}=<dir>" line:\n${out}`);
  const dir = line.slice(part.length + 1).trim();
  for (const bin of REQUIRED[part]) {
    if (!existsSync(join(dir, bin))) throw new Error(`build.sh ${part}: ${bin} missing in ${dir}`);
  }
  return dir;
}

/**
 * The bin directory of `part` if build.sh already built it for the current module files (the same
 * key build.sh computes: sha256 of go.mod + go.sum, 16 hex digits), without building anything.
 */
export function cachedBinaries(part: Part): string | undefined {
  const mod = join(CONTROLPLANE_DIR, part);
  const key = createHash('sha256')
    .update(readFileSync(join(mod, 'go.mod')))
    .update(readFileSync(join(mod, 'go.sum')))
    .digest('hex')
    .slice(0, 16);
  const dir = join(cacheRoot(), `${part}-${key}`);
  return existsSync(join(dir, '.complete')) ? join(dir, 'bin') : undefined;
}

/** Seconds each binary took in the builds so far (the latest per binary), for progress estimates. */
export function buildSeconds(): Record<string, number> {
  const file = join(cacheRoot(), 'build-seconds.tsv');
  if (!existsSync(file)) return {};
  const out: Record<string, number> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [name, secs] = line.split('\t');
    if (name !== undefined && name !== '' && Number(secs) > 0) out[name] = Number(secs);
  }
  return out;
}
