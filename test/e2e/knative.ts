/**
 * Helpers of the tests of knative/: its kustomizations, a cluster admin's copy of it (with the
 * plain-TLS certificate files made by its own script), rendering with the built kubectl's kustomize,
 * and the command blocks of knative/README.md that the tests run as written.
 * @module
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { runKubectl } from '../../local/controlplane/kubectl.js';

/** A rendered Kubernetes object. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [key: string]: unknown;
}

/** The namespace everything of vmpool runs in. */
export const NAMESPACE = 'vmpool-system';

/** Path helper for nested manifest fields (test-only; shapes are asserted by the dry-run). */
export function at(o: unknown, ...path: (string | number)[]): unknown {
  let cur = o;
  for (const p of path) cur = (cur as Record<string | number, unknown> | undefined)?.[p];
  return cur;
}

/** `Kind[.group] [namespace/]name`, as kubectl names objects. */
export function ident(o: K8sObject): string {
  const group = o.apiVersion.includes('/') ? `.${o.apiVersion.split('/')[0] ?? ''}` : '';
  const ns = o.metadata.namespace === undefined ? '' : `${o.metadata.namespace}/`;
  return `${o.kind}${group} ${ns}${o.metadata.name}`;
}

/** Objects of one kind. */
export function byKind(objects: readonly K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}

/**
 * Every directory under `root` (knative/ by default) whose kustomization.yaml is a Kustomization,
 * i.e. what `kubectl apply -k` can be pointed at (Components are not), relative to the repository
 * root and sorted. Read from the tree, so an overlay added later is covered without a test change.
 */
export function kustomizations(root: string = join(REPO_ROOT, 'knative')): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    const file = join(dir, 'kustomization.yaml');
    if (existsSync(file) && !/^kind:\s*Component\s*$/m.test(readFileSync(file, 'utf8')))
      found.push(relative(join(root, '..'), dir));
    for (const entry of readdirSync(dir)) {
      const sub = join(dir, entry);
      if (statSync(sub).isDirectory()) walk(sub);
    }
  };
  walk(root);
  return found.sort();
}

/**
 * A cluster admin's checkout: a copy of knative/ in a temporary directory, with (`certs`, the
 * default) the plain-TLS certificate files made by `overlays/plain-tls/certs/self-signed.sh`. The
 * repository's own tree is never written to. Returns the directory that holds `knative/`.
 */
export async function adminCheckout(opts: { certs?: boolean } = {}): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'vmpool-knative-'));
  cpSync(join(REPO_ROOT, 'knative'), join(dir, 'knative'), { recursive: true });
  if (opts.certs ?? true)
    await promisify(execFile)(join(dir, 'knative/overlays/plain-tls/certs/self-signed.sh'), []);
  return dir;
}

/** Renders one kustomization with `kubectl kustomize`. */
export async function render(
  kubectl: string,
  kubeconfig: string,
  dir: string,
): Promise<{ text: string; objects: K8sObject[] }> {
  const text = await runKubectl(kubectl, kubeconfig, ['kustomize', dir]);
  const objects = parseAllDocuments(text)
    .map((d) => d.toJSON() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  return { text, objects };
}

/**
 * The shell blocks of knative/README.md marked `<!-- e2e: NAME -->`, by name: the commands a
 * cluster admin runs, which the tests run as written.
 */
export function readmeBlocks(): Map<string, string> {
  const text = readFileSync(join(REPO_ROOT, 'knative', 'README.md'), 'utf8');
  const blocks = new Map<string, string>();
  for (const m of text.matchAll(/<!-- e2e: ([a-z0-9-]+) -->\n```sh\n([\s\S]*?)```/g))
    blocks.set(m[1]!, m[2]!);
  return blocks;
}

/** One README block by name; a missing block fails the test that needs it. */
export function readmeBlock(name: string): string {
  const block = readmeBlocks().get(name);
  if (block === undefined) throw new Error(`knative/README.md has no block <!-- e2e: ${name} -->`);
  return block;
}

/** ISO-8601 durations as Knative writes them (`PT100S`, `PT2M`, `PT0.5S`), in seconds. */
export function isoSeconds(d: string): number {
  const m = /^PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?$/.exec(d);
  if (m === null || d === 'PT') throw new Error(`not an ISO-8601 time duration: ${d}`);
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}
