/**
 * The deployment manifests against the real kube-apiserver: `kubectl kustomize` renders knative/base
 * and knative/overlays/cert-manager, and every rendered object must pass a server-side dry-run with
 * the real Knative CRDs (and minimal cert-manager CRDs) installed. Snapshots pin what is shipped:
 * the objects and the RBAC verbs of every role.
 * @module
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { SUBRESOURCES_GROUP } from '../../shared/api/index.js';
import { FUNCTIONS } from '../../scripts/build.js';
import { POOL_PATH, SCALE_PATH } from '../../functions/scale-validate/app.js';
import { toYaml } from '../../local/controlplane/kubectl.js';
import { cluster } from './harness.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NAMESPACE = 'vmpool-system';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  [key: string]: unknown;
}

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
}

/**
 * The real Knative CRDs: `$VMPOOL_KNATIVE_CRDS`, else the shared fixtures next to the repository.
 * Missing CRDs fail the run: a skipped manifest check would pass silently.
 */
function knativeCrdDir(): string {
  const fromEnv = process.env.VMPOOL_KNATIVE_CRDS;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!existsSync(fromEnv)) throw new Error(`VMPOOL_KNATIVE_CRDS=${fromEnv} does not exist`);
    return fromEnv;
  }
  const shared = join(ROOT, '..', 'shared', 'fixtures', 'knative-crds');
  if (existsSync(shared)) return shared;
  throw new Error(
    `no Knative CRDs: set VMPOOL_KNATIVE_CRDS to a directory of them (looked in ${shared})`,
  );
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .map((f) => join(dir, f));
}

async function render(dir: string): Promise<{ text: string; objects: K8sObject[] }> {
  const text = await cluster().kubectl(['kustomize', join(ROOT, dir)]);
  const objects = parseAllDocuments(text)
    .map((d) => d.toJSON() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
  return { text, objects };
}

/** Installs CRDs for real and waits until they are served. */
async function installCrds(files: string[]): Promise<void> {
  const { kubectl } = cluster();
  const names: string[] = [];
  for (const f of files) {
    const out = await kubectl([
      'apply',
      '--server-side',
      '--force-conflicts',
      '-f',
      f,
      '-o',
      'name',
    ]);
    names.push(...out.split('\n').filter((l) => l.startsWith('customresourcedefinition')));
  }
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...names]);
}

/** `Kind[.group] [namespace/]name`, as kubectl names objects. */
function ident(o: K8sObject): string {
  const group = o.apiVersion.includes('/') ? `.${o.apiVersion.split('/')[0] ?? ''}` : '';
  const ns = o.metadata.namespace === undefined ? '' : `${o.metadata.namespace}/`;
  return `${o.kind}${group} ${ns}${o.metadata.name}`;
}

/** Server-side dry-run of every object; returns kubectl's per-object lines. */
async function dryRun(text: string): Promise<string[]> {
  const out = await cluster().kubectl(['apply', '--dry-run=server', '-f', '-'], text);
  return out.split('\n').filter((l) => l.trim() !== '');
}

/** The RBAC verbs of every role, as `group/resource: verbs`. */
function rbacVerbs(objects: K8sObject[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const o of objects) {
    if (o.kind !== 'ClusterRole' && o.kind !== 'Role') continue;
    const rules = (o.rules ?? []) as Rule[];
    out[`${o.kind} ${o.metadata.name}`] = rules.flatMap((r) =>
      (r.apiGroups ?? ['']).flatMap((g) =>
        (r.resources ?? []).map((res) => `${g === '' ? 'core' : g}/${res}: ${r.verbs.join(',')}`),
      ),
    );
  }
  return out;
}

function byKind(objects: K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}

/** Path helper for nested manifest fields (test-only; shapes are asserted by the dry-run). */
function at(o: unknown, ...path: (string | number)[]): unknown {
  let cur = o;
  for (const p of path) cur = (cur as Record<string | number, unknown> | undefined)?.[p];
  return cur;
}

beforeAll(async () => {
  const crdDir = knativeCrdDir();
  await installCrds([...yamlFiles(crdDir), ...yamlFiles(join(ROOT, 'test/fixtures/cert-manager'))]);
  // Namespaced objects dry-run only into an existing namespace, so this one is created for real.
  await cluster().applyManifest([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
  ]);
});

afterAll(async () => {
  // Cheap and enough: nothing was created in it. The CRDs stay (cluster-scoped, unused elsewhere).
  await cluster()
    .kubectl(['delete', 'namespace', NAMESPACE, '--wait=false'])
    .catch(() => undefined);
});

describe('knative/base', () => {
  it('is accepted object by object by a server-side dry-run', async () => {
    const { text, objects } = await render('knative/base');
    const lines = await dryRun(text);
    console.log(`[manifests] knative/base: ${lines.length} objects accepted by server dry-run`);
    expect(lines).toHaveLength(objects.length);
    for (const l of lines) expect(l).toMatch(/ (created|configured|unchanged) \(server dry run\)$/);
  });

  it('has teeth: the dry-run rejects a wrong type and an unknown field', async () => {
    const { objects } = await render('knative/base');
    const ksvc = structuredClone(
      objects.find((o) => o.kind === 'Service' && o.apiVersion.startsWith('serving.knative.dev')),
    )!;
    (at(ksvc, 'spec', 'template', 'spec') as Record<string, unknown>).containerConcurrency = 'ten';
    await expect(dryRun(toYaml([ksvc]))).rejects.toThrow(/containerConcurrency/);
    // Knative's CRDs preserve unknown fields under most specs (their webhook, absent here, is what
    // rejects typos there), so the unknown-field probe uses a built-in kind.
    const deployment = structuredClone(byKind(objects, 'Deployment')[0]!);
    (at(deployment, 'spec') as Record<string, unknown>).replicaz = 2;
    await expect(dryRun(toYaml([deployment]))).rejects.toThrow(/replicaz/);
  });

  it('ships these objects and RBAC verbs', async () => {
    const { objects } = await render('knative/base');
    expect(objects.map(ident)).toMatchSnapshot('objects');
    expect(rbacVerbs(objects)).toMatchSnapshot('rbac');
  });

  it('agrees with the code: bundles, webhook paths, API group, accounts', async () => {
    const { objects } = await render('knative/base');
    const accounts = new Set(
      byKind(objects, 'ServiceAccount').map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
    );
    const started = new Set<string>();
    for (const w of [...byKind(objects, 'Deployment'), ...byKind(objects, 'Service')]) {
      const pod = at(w, 'spec', 'template', 'spec');
      const containers = at(pod, 'containers') as { image: string; args?: string[] }[] | undefined;
      const c = containers?.[0];
      if (c === undefined || !c.image.startsWith('vmpool')) continue;
      expect(c.image).toBe('vmpool:latest');
      const bundle = /^dist\/(.+)\.mjs$/.exec(c.args?.[0] ?? '')?.[1];
      expect(FUNCTIONS).toContain(bundle);
      started.add(bundle!);
      expect(accounts).toContain(`${NAMESPACE}/${String(at(pod, 'serviceAccountName'))}`);
    }
    expect([...started].sort()).toEqual([...FUNCTIONS].sort());

    for (const b of [...byKind(objects, 'ClusterRoleBinding'), ...byKind(objects, 'RoleBinding')]) {
      for (const s of at(b, 'subjects') as { name: string; namespace: string }[])
        expect(accounts).toContain(`${s.namespace}/${s.name}`);
    }

    const [webhook] = byKind(objects, 'ValidatingWebhookConfiguration');
    const paths = (at(webhook, 'webhooks') as unknown[]).map((w) =>
      at(w, 'clientConfig', 'service', 'path'),
    );
    expect(paths).toEqual([POOL_PATH, SCALE_PATH]);

    const [apiService] = byKind(objects, 'APIService');
    expect(at(apiService, 'spec', 'group')).toBe(SUBRESOURCES_GROUP);
    expect(at(apiService, 'spec', 'service')).toEqual({
      name: 'scale-down-with',
      namespace: NAMESPACE,
      port: 443,
    });

    for (const t of byKind(objects, 'Trigger')) {
      expect(at(t, 'spec', 'delivery')).toMatchObject({
        backoffPolicy: 'exponential',
        backoffDelay: 'PT0.5S',
        deadLetterSink: { ref: { kind: 'Service', name: 'vmpool-dead-letter' } },
      });
    }
    // The storage version: no conversion webhook (absent here) is ever needed.
    for (const p of byKind(objects, 'PingSource'))
      expect(p.apiVersion).toBe('sources.knative.dev/v1');
  });
});

describe('knative/overlays/cert-manager', () => {
  it('is accepted object by object by a server-side dry-run', async () => {
    const { text, objects } = await render('knative/overlays/cert-manager');
    const lines = await dryRun(text);
    console.log(
      `[manifests] knative/overlays/cert-manager: ${lines.length} objects accepted by server dry-run`,
    );
    expect(lines).toHaveLength(objects.length);
    for (const l of lines) expect(l).toMatch(/ (created|configured|unchanged) \(server dry run\)$/);
  });

  it('injects the CA into the webhook and the APIService and issues both DNS names', async () => {
    const { objects } = await render('knative/overlays/cert-manager');
    const base = (await render('knative/base')).objects.map(ident);
    expect(objects.map(ident).filter((i) => !base.includes(i))).toMatchSnapshot('added objects');
    for (const kind of ['ValidatingWebhookConfiguration', 'APIService']) {
      const [o] = byKind(objects, kind);
      expect(o?.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(
        `${NAMESPACE}/vmpool-serving`,
      );
    }
    const serving = byKind(objects, 'Certificate').find(
      (c) => c.metadata.name === 'vmpool-serving',
    );
    expect(at(serving, 'spec', 'secretName')).toBe('vmpool-tls');
    expect(at(serving, 'spec', 'dnsNames')).toEqual(
      expect.arrayContaining([
        `scale-validate.${NAMESPACE}.svc`,
        `scale-down-with.${NAMESPACE}.svc`,
      ]),
    );
  });
});
