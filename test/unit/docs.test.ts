/**
 * The documentation's links resolve: every relative link in README.md, docs/*.md and
 * knative/README.md names a file of the repository, and every `#anchor` into a Markdown file names
 * one of its headings, slugged as GitHub slugs them. And the user guide names every field of a
 * pool's spec.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { poolCrd } from '../../shared/api/crd.js';

/** The documents a reader follows links in. */
const DOCS = [
  'README.md',
  'knative/README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The text outside fenced code blocks and inline code, where a `[x](y)` is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function slugs(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (m === null) continue;
    const base = (m[1] ?? '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${String(n)}`);
  }
  return out;
}

/** The relative links of `text` (document `doc`'s own by default) that do not resolve, with why. */
function brokenLinks(
  root: string,
  doc: string,
  text = readFileSync(join(root, doc), 'utf8'),
): string[] {
  const broken: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1] ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
    const [path = '', anchor] = target.split('#', 2);
    const file = path === '' ? join(root, doc) : join(root, dirname(doc), path);
    const shown = `${doc}: (${target})`;
    if (relative(root, file).startsWith('..')) {
      broken.push(`${shown} leaves the repository`);
      continue;
    }
    if (!existsSync(file)) {
      broken.push(`${shown}: no file ${relative(root, file)}`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (!file.endsWith('.md')) {
      broken.push(`${shown}: an anchor into a file that is not Markdown`);
      continue;
    }
    if (!slugs(readFileSync(file, 'utf8')).has(anchor))
      broken.push(`${shown}: ${relative(root, file)} has no heading #${anchor}`);
  }
  return broken;
}

describe('documentation links', () => {
  it('covers the README, every file of docs/ and the Knative guide', () => {
    expect(DOCS).toEqual(
      expect.arrayContaining(['README.md', 'knative/README.md', 'docs/guide.md', 'docs/fleet.md']),
    );
  });

  it.each(DOCS)('every relative link and anchor in %s resolves', (doc) => {
    expect(brokenLinks(REPO_ROOT, doc)).toEqual([]);
  });

  it('slugs headings as GitHub does', () => {
    const s = slugs(
      [
        '# vmpool',
        "## The user guide's YAML works as is",
        '### Warm standby: `spec.standby`',
        '## Fleet control: protection, deletion cost, spread, drain, preview',
        '## Tests',
        '## Tests',
        '```sh',
        '# not a heading',
        '```',
      ].join('\n'),
    );
    expect([...s]).toEqual([
      'vmpool',
      'the-user-guides-yaml-works-as-is',
      'warm-standby-specstandby',
      'fleet-control-protection-deletion-cost-spread-drain-preview',
      'tests',
      'tests-1',
    ]);
  });

  it('reports a missing file, a missing heading and a link out of the repository', () => {
    // Links as if written in the README: each bent one is reported, so the check above can fail.
    const doc = 'README.md';
    const root = REPO_ROOT;
    const bent = brokenLinks(
      root,
      doc,
      [
        '[a](docs/no-such-file.md)',
        '[b](docs/guide.md#no-such-heading)',
        '[c](../outside.md)',
        '[d](docs/guide.md#configuration) [e](#quick-start) [f](https://example.com/x.md)',
        '`[g](not-a-link.md)`',
        '```sh',
        'echo "[h](nor-this.md)"',
        '```',
      ].join('\n'),
    );
    expect(bent).toEqual([
      'README.md: (docs/no-such-file.md): no file docs/no-such-file.md',
      'README.md: (docs/guide.md#no-such-heading): docs/guide.md has no heading #no-such-heading',
      'README.md: (../outside.md) leaves the repository',
    ]);
  });
});

interface SchemaNode {
  readonly properties?: Record<string, SchemaNode>;
  readonly items?: SchemaNode;
}

/**
 * The leaf fields of the pool CRD's `spec` as the guide writes them (`spec.a.b`, `[]` for a list's
 * items), stopping at the platform's own VirtualMachine and VirtualDisk specs.
 */
function specFields(): string[] {
  const crd = poolCrd() as {
    spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: SchemaNode } } } }[] };
  };
  const spec = crd.spec.versions[0]?.schema.openAPIV3Schema.properties.spec;
  const out: string[] = [];
  const walk = (node: SchemaNode, path: string): void => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const p = `${path}.${key}`;
      const inner = child.items?.properties === undefined ? child : child.items;
      const items = inner === child ? p : `${p}[]`;
      const platforms = p === 'spec.virtualMachineTemplate.spec' || p.endsWith('[].spec');
      if (platforms || inner.properties === undefined) out.push(p);
      else walk(inner, items);
    }
  };
  if (spec !== undefined) walk(spec, 'spec');
  return out;
}

describe('docs/guide.md', () => {
  it('names every field of the pool spec', () => {
    const fields = specFields();
    expect(fields).toEqual(
      expect.arrayContaining(['spec.replicas', 'spec.virtualDiskTemplates[].reclaim.ttl']),
    );
    const guide = readFileSync(join(REPO_ROOT, 'docs', 'guide.md'), 'utf8');
    expect(fields.filter((f) => !guide.includes(`\`${f}\``))).toEqual([]);
  });
});
