/**
 * The image cannot be built here (no container runtime), so its supply-chain properties are read
 * from the Containerfile: base images pinned by digest with a way to refresh them, and a final stage
 * with no package manager and no shell, running unprivileged over read-only files.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { imageStart } from '../../scripts/image-start.js';

const text = readFileSync(join(REPO_ROOT, 'Containerfile'), 'utf8');

/** Instructions (continuations joined, comments dropped), split into stages at each FROM. */
function stages(): string[][] {
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const out: string[][] = [];
  for (const i of instructions) {
    if (/^FROM /i.test(i)) out.push([i]);
    else out[out.length - 1]?.push(i);
  }
  return out;
}

describe('Containerfile', () => {
  it('pins every base image by digest and says how to refresh the digests', () => {
    const froms = stages().map((s) => s[0] ?? '');
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const f of froms) expect(f).toMatch(/^FROM \S+@sha256:[0-9a-f]{64}( AS \S+)?$/);
    expect(text).toMatch(/To refresh them/);
    expect(text).toMatch(/skopeo inspect --format '\{\{\.Digest\}\}' docker:\/\/\S+node:24-slim/);
  });

  it('the runtime stage has no shell, no package manager and nothing writable, and runs unprivileged', () => {
    const runtime = stages().at(-1) ?? [];
    // A distroless base: no shell, so no RUN can even exist; nothing of npm is copied in.
    expect(runtime[0]).toMatch(/^FROM gcr\.io\/distroless\/cc-debian12:nonroot@sha256:/);
    expect(runtime.filter((i) => /^(RUN|SHELL) /i.test(i))).toEqual([]);
    expect(runtime.join('\n')).not.toMatch(/npm|npx|corepack|node_modules|yarn|pnpm/);
    const copies = runtime.filter((i) => /^(COPY|ADD) /i.test(i));
    expect(copies.length).toBeGreaterThan(0);
    for (const c of copies) {
      expect(c).toMatch(/^COPY --from=build /);
      // Root-owned, no write bit for anyone: the process cannot change what it runs.
      expect(c).toContain('--chown=root:root');
      expect(c).toMatch(/--chmod=0[45][45][45] /);
    }
    const sources = copies.flatMap((c) =>
      c
        .split(/\s+/)
        .slice(1, -1)
        .filter((w) => !w.startsWith('--')),
    );
    for (const s of sources) expect(s).toMatch(/^(\/usr\/local\/bin\/node|\/src\/dist\/\S+)$/);
    const user = runtime.find((i) => /^USER /.test(i));
    expect(user).toMatch(/^USER [1-9]\d*:[1-9]\d*$/);
    // The start itself (flags, snapshot) is test/unit/image-start.test.ts's.
    expect(runtime.find((i) => i.startsWith('ENTRYPOINT'))).toBe(
      `ENTRYPOINT ${JSON.stringify(imageStart('reconcile-pool').command).replaceAll(',', ', ')}`,
    );
  });
});
