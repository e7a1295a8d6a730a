/**
 * What ships is what is measured: the Containerfile's ENTRYPOINT and CMD and every function's
 * command and args in knative/ are the start of scripts/image-start.ts, which the cold-start
 * benchmark (bench/coldstart.ts) runs; a drift on either side fails here.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { FUNCTIONS } from '../../scripts/build.js';
import { IMAGE_NODE, imageStart } from '../../scripts/image-start.js';

/** Instructions of the Containerfile (continuations joined, comments dropped). */
const instructions = readFileSync(join(REPO_ROOT, 'Containerfile'), 'utf8')
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
const runtime = instructions.slice(instructions.findLastIndex((i) => i.startsWith('FROM ')));
const build = instructions.slice(
  0,
  instructions.findLastIndex((i) => i.startsWith('FROM ')),
);

/** The JSON array of an exec-form instruction (`ENTRYPOINT [...]`). */
function execForm(keyword: string): unknown {
  const line = runtime.find((i) => i.startsWith(`${keyword} `));
  return JSON.parse(line?.slice(keyword.length + 1) ?? 'null');
}

interface Container {
  readonly name?: string;
  readonly command?: unknown;
  readonly args?: unknown;
  readonly env?: ReadonlyArray<{ readonly name: string; readonly value?: string }>;
}

/** Every container of every workload in knative/ (base and overlays, patches included). */
function containers(dir: string): Array<Container & { file: string }> {
  const out: Array<Container & { file: string }> = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.ya?ml$/.test(entry.name)) continue;
    const file = join(entry.parentPath, entry.name);
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) for (const n of node) walk(n);
      else if (node !== null && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === 'containers' && Array.isArray(v))
            for (const c of v as Container[]) out.push({ ...c, file });
          walk(v);
        }
      }
    };
    for (const doc of parseAllDocuments(readFileSync(file, 'utf8'))) walk(doc.toJS());
  }
  return out;
}

describe('the image start', () => {
  it('the Containerfile builds every snapshot with the node binary it ships, and starts from one', () => {
    const start = imageStart('reconcile-pool');
    expect(execForm('ENTRYPOINT')).toEqual(start.command);
    // The default function (FUNCTION build arg) from its snapshot, copied to dist/main.blob.
    expect(execForm('CMD')).toEqual(['--snapshot-blob', 'dist/main.blob']);
    expect(start.args).toEqual(['--snapshot-blob', 'dist/reconcile-pool.blob']);
    expect(build).toContain('RUN npm run build -- --snapshot');
    expect(build).toContain('RUN cp "dist/${FUNCTION}.blob" dist/main.blob');
    // The blob's writer and its reader are one binary: the build stage's node, copied as is.
    expect(build[0]).toMatch(/^FROM \S*node:\S+ AS build$/);
    expect(runtime).toContainEqual(
      expect.stringMatching(new RegExp(` ${IMAGE_NODE} ${IMAGE_NODE}$`)),
    );
    expect(runtime).toContainEqual(
      expect.stringMatching(/^COPY --from=build \S+ \S+ \/src\/dist\/\*\.blob \/app\/dist\/$/),
    );
    expect(runtime).toContain('WORKDIR /app');
    // The image's ENV sets the start's environment, every variable of it.
    const env = runtime.filter((i) => i.startsWith('ENV ')).join(' ');
    for (const [k, v] of Object.entries(start.env))
      expect(env).toMatch(new RegExp(` ${k}=${v}( |$)`));
  });

  it('knative/ starts every function as the image start says, and nothing overrides it', () => {
    const all = containers(join(REPO_ROOT, 'knative'));
    for (const name of FUNCTIONS) {
      const own = all.filter((c) => c.name === name);
      const base = own.filter((c) => c.file.includes(join('knative', 'base')));
      expect(base, name).toHaveLength(1);
      for (const c of base) {
        expect(c.command, `${name} in ${c.file}`).toEqual(imageStart(name).command);
        expect(c.args, `${name} in ${c.file}`).toEqual(imageStart(name).args);
      }
      // An overlay's patch of the container (env, ports) leaves the start alone.
      for (const c of own.filter((o) => !base.includes(o))) {
        expect(c.command, `${name} in ${c.file}`).toBeUndefined();
        expect(c.args, `${name} in ${c.file}`).toBeUndefined();
      }
      // Nor does any container set a variable of the image's environment to something else.
      for (const c of own)
        for (const e of c.env ?? [])
          if (e.name in imageStart(name).env)
            expect(e.value, `${name} ${e.name} in ${c.file}`).toBe(imageStart(name).env[e.name]);
    }
  });
});
