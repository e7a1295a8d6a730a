/**
 * The deployment manifests against the real kube-apiserver. Every kustomization under knative/ is
 * rendered by the built kubectl's kustomize (from an admin's copy of knative/, with the plain-TLS
 * certificate files made by its own script) and every rendered object must pass a server-side dry-run
 * with the real Knative CRDs (and minimal cert-manager and Prometheus Operator CRDs) installed. Then
 * what a renderer can see is asserted: the pool CRD only in knative/crd, the APIService only in a last
 * step and never without a caBundle source, the source's label selectors, Trigger and Service
 * timeouts that agree, pinned images, an Uninstall that covers every object and no CRD. Snapshots pin
 * the objects of the base and the RBAC verbs of every role.
 * @module
 */
import { appendFileSync, cpSync, existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  API_VERSION,
  CLAIM_API_VERSION,
  OWN_SUBRESOURCES_GROUP,
  SCALE_DOWN_WITH_EVENT,
  SUBRESOURCES_GROUP,
  keys,
} from '../../shared/api/index.js';
import { ADMISSION_BUDGET } from '../../shared/reconcile/index.js';
import {
  DEFAULT_EVENTS_AUDIENCE,
  DEFAULT_SENDER_AUDIENCE,
} from '../../functions/scale-down-with/events.js';
import { FUNCTIONS } from '../../scripts/build.js';
import { imageStart } from '../../scripts/image-start.js';
import { CLAIM_PATH, POOL_PATH, SCALE_PATH } from '../../functions/scale-validate/app.js';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { toYaml } from '../../local/controlplane/kubectl.js';
import { cluster } from './harness.js';
import {
  NAMESPACE,
  adminCheckout,
  at,
  byKind,
  ident,
  isoSeconds,
  kustomizations,
  readmeBlock,
  render,
  type K8sObject,
} from './knative.js';

/** The group an apiservice step registers: vmpool's own under overlays/own-group (docs/operations.md, "Attach mode"). */
const groupOf = (dir: string): string =>
  dir.startsWith('knative/overlays/own-group/') ? OWN_SUBRESOURCES_GROUP : SUBRESOURCES_GROUP;
/**
 * An admin's copy of overlays/example with the scaledownwith-events component added, and the oidc
 * component it needs beside it (knative/README.md).
 */
const WITH_EVENTS = 'knative/overlays/with-events';
/** Every kustomization of the repository's knative/, found on disk (Components excluded). */
const DIRS = kustomizations();

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
  const shared = join(REPO_ROOT, '..', 'shared', 'fixtures', 'knative-crds');
  if (existsSync(shared)) return shared;
  throw new Error(
    `no Knative CRDs: set VMPOOL_KNATIVE_CRDS to a directory of them (looked in ${shared})`,
  );
}

/** The YAML files of a directory, sorted. */
function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .map((f) => join(dir, f));
}

let checkout = '';
const renders = new Map<string, { text: string; objects: K8sObject[] }>();

/** A render of the admin's checkout, by directory relative to the repository root. */
function rendered(dir: string): { text: string; objects: K8sObject[] } {
  const r = renders.get(dir);
  if (r === undefined) throw new Error(`${dir} was not rendered`);
  return r;
}
const objectsOf = (dir: string): K8sObject[] => rendered(dir).objects;

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

/** Server-side dry-run of every object, as the README applies them; returns kubectl's lines. */
async function dryRun(text: string): Promise<string[]> {
  const out = await cluster().kubectl(
    ['apply', '--server-side', '--field-manager=vmpool', '--dry-run=server', '-f', '-'],
    text,
  );
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

/** Container images of every workload (Deployments and Knative Services). */
function images(objects: K8sObject[]): string[] {
  return objects.flatMap((o) =>
    ((at(o, 'spec', 'template', 'spec', 'containers') ?? []) as { image: string }[]).map(
      (c) => c.image,
    ),
  );
}

/** Where an object's CA comes from: a caBundle in the manifest, or cainjector's annotation. */
function caSource(o: K8sObject, bundles: unknown[]): 'manifest' | 'cainjector' | undefined {
  if (bundles.length > 0 && bundles.every((b) => typeof b === 'string' && b.trim() !== ''))
    return 'manifest';
  if ((o.metadata.annotations?.['cert-manager.io/inject-ca-from'] ?? '') !== '')
    return 'cainjector';
  return undefined;
}

beforeAll(async () => {
  await installCrds([
    ...yamlFiles(knativeCrdDir()),
    ...yamlFiles(join(REPO_ROOT, 'test/fixtures/cert-manager')),
    ...yamlFiles(join(REPO_ROOT, 'test/fixtures/prometheus-operator')),
    ...yamlFiles(join(REPO_ROOT, 'test/fixtures/knative-eventpolicy')),
  ]);
  // Namespaced objects dry-run only into an existing namespace, so this one is created for real.
  await cluster().applyManifest([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
  ]);
  checkout = await adminCheckout();
  const { info } = cluster();
  for (const dir of DIRS)
    renders.set(
      dir,
      await render(join(info.binDir, 'kubectl'), info.kubeconfigPath, join(checkout, dir)),
    );
  // The optional CloudEvent form, as knative/README.md says to add it: the component, with the oidc
  // one, in a copy of overlays/example.
  const withEvents = join(checkout, WITH_EVENTS);
  cpSync(join(checkout, 'knative/overlays/example'), withEvents, { recursive: true });
  appendFileSync(
    join(withEvents, 'kustomization.yaml'),
    'components:\n  - ../oidc\n  - ../scaledownwith-events\n',
  );
  renders.set(
    WITH_EVENTS,
    await render(join(info.binDir, 'kubectl'), info.kubeconfigPath, withEvents),
  );
});

afterAll(async () => {
  if (checkout !== '') rmSync(checkout, { recursive: true, force: true });
  // Cheap and enough: nothing was created in it. The CRDs stay (cluster-scoped, unused elsewhere).
  await cluster()
    .kubectl(['delete', 'namespace', NAMESPACE, '--wait=false'])
    .catch(() => undefined);
});

describe('every kustomization under knative/', () => {
  it('includes the install steps and overlays the README names', () => {
    console.log(`[manifests] kustomizations: ${DIRS.join(', ')}`);
    expect(DIRS).toEqual(
      expect.arrayContaining([
        'knative/crd',
        'knative/base',
        'knative/overlays/cert-manager',
        'knative/overlays/cert-manager/apiservice',
        'knative/overlays/plain-tls',
        'knative/overlays/plain-tls/apiservice',
        'knative/overlays/example',
        'knative/overlays/podmonitor',
      ]),
    );
  });

  it.each(DIRS)('%s is accepted object by object by a server-side dry-run', async (dir) => {
    const { text, objects } = rendered(dir);
    const lines = await dryRun(text);
    console.log(`[manifests] ${dir}: ${lines.length} objects accepted by server dry run`);
    expect(objects.length).toBeGreaterThan(0);
    expect(lines).toHaveLength(objects.length);
    for (const l of lines) expect(l).toMatch(/ serverside-applied \(server dry run\)$/);
  });

  it('has teeth: the dry-run rejects a wrong type and an unknown field', async () => {
    const objects = objectsOf('knative/base');
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

  it('the CRDs are in knative/crd alone: uninstalling the controller cannot delete pools or claims', () => {
    expect(objectsOf('knative/crd').map(ident)).toEqual([
      'CustomResourceDefinition.apiextensions.k8s.io virtualmachineclaims.vmpool.virtualization.deckhouse.io',
      'CustomResourceDefinition.apiextensions.k8s.io virtualmachinepools.virtualization.deckhouse.io',
    ]);
    for (const dir of DIRS.filter((d) => d !== 'knative/crd'))
      expect(byKind(objectsOf(dir), 'CustomResourceDefinition'), dir).toEqual([]);
  });

  it('the APIService comes only in a last step of its own, never with the controller', () => {
    for (const dir of DIRS) {
      const objects = objectsOf(dir);
      if (byKind(objects, 'APIService').length === 0) continue;
      expect(dir, 'an APIService outside an apiservice step').toMatch(/\/apiservice$/);
      // Applying the step registers the API and nothing that runs (at most the CA's Secret).
      expect(
        objects.map((o) => o.kind).filter((k) => k !== 'APIService' && k !== 'Secret'),
      ).toEqual([]);
    }
    for (const dir of DIRS.filter((d) => d.endsWith('/apiservice')))
      expect(byKind(objectsOf(dir), 'APIService').map((o) => o.metadata.name)).toEqual([
        `v1alpha2.${groupOf(dir)}`,
      ]);
  });

  it('no APIService and no installable webhook without a caBundle source', () => {
    for (const dir of DIRS) {
      for (const api of byKind(objectsOf(dir), 'APIService'))
        expect(caSource(api, [at(api, 'spec', 'caBundle')]), `${dir}: APIService`).toBeDefined();
      // knative/base is never applied alone (README); every overlay built on it adds the source.
      if (dir === 'knative/base') continue;
      for (const hook of byKind(objectsOf(dir), 'ValidatingWebhookConfiguration')) {
        const bundles = (at(hook, 'webhooks') as unknown[]).map((w) =>
          at(w, 'clientConfig', 'caBundle'),
        );
        expect(caSource(hook, bundles), `${dir}: webhook`).toBeDefined();
      }
    }
    const [baseHook] = byKind(objectsOf('knative/base'), 'ValidatingWebhookConfiguration');
    expect(caSource(baseHook!, [at(baseHook, 'webhooks', 0, 'clientConfig', 'caBundle')])).toBe(
      undefined,
    );
  });

  it('the ApiServerSource selects members and disks by the pool-uid label, with no owner filter, and every claim', () => {
    const sources = byKind(objectsOf('knative/base'), 'ApiServerSource');
    expect(sources.map((s) => s.metadata.name)).toEqual(['vmpool']);
    const spec = sources[0]!.spec as {
      mode: string;
      owner?: unknown;
      namespaceSelector?: unknown;
      resources: { apiVersion: string; kind: string; selector?: unknown }[];
    };
    expect(spec.mode).toBe('Resource');
    expect(spec.owner).toBeUndefined();
    expect(spec.namespaceSelector).toEqual({});
    const exists = { matchExpressions: [{ key: keys.poolUid, operator: 'Exists' }] };
    expect(spec.resources.map((r) => [r.apiVersion, r.kind, r.selector])).toEqual([
      [API_VERSION, 'VirtualMachinePool', undefined],
      [API_VERSION, 'VirtualMachine', exists],
      [API_VERSION, 'VirtualDisk', exists],
      [CLAIM_API_VERSION, 'VirtualMachineClaim', undefined],
    ]);
    // Each watched kind is routed to reconcile-pool.
    const [watch] = byKind(objectsOf('knative/base'), 'Trigger').filter(
      (t) => t.metadata.name === 'reconcile-pool-watch',
    );
    const kinds = (at(watch, 'spec', 'filters', 1, 'any') as { exact: { kind: string } }[]).map(
      (f) => f.exact.kind,
    );
    expect(kinds).toEqual(spec.resources.map((r) => r.kind));
    // A disk's add is not delivered (eventing.yaml says why), in either mode of the source.
    expect(at(watch, 'spec', 'filters', 2)).toEqual({
      not: { all: [{ suffix: { type: '.add' } }, { exact: { kind: 'VirtualDisk' } }] },
    });
  });

  it("each Trigger's timeout equals its subscriber's timeoutSeconds", () => {
    for (const dir of DIRS) {
      const objects = objectsOf(dir);
      const ksvcs = new Map(
        objects
          .filter((o) => o.kind === 'Service' && o.apiVersion.startsWith('serving.knative.dev/'))
          .map((s) => [s.metadata.name, at(s, 'spec', 'template', 'spec', 'timeoutSeconds')]),
      );
      for (const t of byKind(objects, 'Trigger')) {
        const subscriber = at(t, 'spec', 'subscriber', 'ref', 'name') as string;
        const timeout = at(t, 'spec', 'delivery', 'timeout') as string;
        expect(ksvcs.get(subscriber), `${dir}: ${subscriber}`).toBeTypeOf('number');
        expect(isoSeconds(timeout), `${dir}: Trigger ${t.metadata.name}`).toBe(
          ksvcs.get(subscriber),
        );
      }
    }
    // And the two that were apart: a GC pass and a resync both end before their next tick.
    const triggers = byKind(objectsOf('knative/base'), 'Trigger');
    const timeoutOf = (name: string) =>
      isoSeconds(
        at(
          triggers.find((t) => t.metadata.name === name),
          'spec',
          'delivery',
          'timeout',
        ) as string,
      );
    // A GC tick and its retries end before the next tick (every minute), so none queues behind a
    // pass (one request at a time), and the ksvc is kept up rather than claimed to scale to zero.
    const gc = triggers.find((t) => t.metadata.name === 'disk-gc-tick');
    const retries = at(gc, 'spec', 'delivery', 'retry') as number;
    expect((retries + 1) * timeoutOf('disk-gc-tick') + retries * 0.5).toBeLessThan(60);
    const ping = byKind(objectsOf('knative/base'), 'PingSource').find(
      (p) => p.metadata.name === 'vmpool-disk-gc',
    );
    expect(at(ping, 'spec', 'schedule')).toBe('* * * * *');
    const gcSvc = byKind(objectsOf('knative/base'), 'Service').find(
      (s) => s.metadata.name === 'disk-gc-tick',
    );
    expect(at(gcSvc, 'spec', 'template', 'spec', 'containerConcurrency')).toBe(1);
    expect(
      (at(gcSvc, 'spec', 'template', 'metadata', 'annotations') as Record<string, string>)[
        'autoscaling.knative.dev/min-scale'
      ],
    ).toBe('1');
    expect(timeoutOf('reconcile-pool-resync')).toBeLessThan(2 * 60);
  });

  it("images are pinned by digest but for base's `vmpool` placeholder, which the example overlay sets", () => {
    const digest = /@sha256:[0-9a-f]{64}$/;
    for (const dir of DIRS)
      for (const image of images(objectsOf(dir)))
        if (image !== 'vmpool') expect(image, dir).toMatch(digest);
    const example = images(objectsOf('knative/overlays/example'));
    expect(example).not.toContain('vmpool');
    expect(example.filter((i) => i.includes('/vmpool@')).length).toBe(FUNCTIONS.length);
    expect(example).toContain(
      'gcr.io/knative-releases/knative.dev/eventing/cmd/event_display@sha256:610234e4319b767b187398085971d881956da660a4e0fab65a763e0f81881d82',
    );
  });

  it('the documented Uninstall removes every object an install creates and never a CRD', () => {
    const commands = readmeBlock('uninstall')
      .split('\n')
      .filter((l) => l.startsWith('kubectl delete '));
    expect(commands.join('\n')).not.toMatch(/crd|customresourcedefinition/i);
    const byLabel = (kind: string, ns?: string) =>
      commands.some(
        (c) =>
          c.split(' ')[2]!.split(',').includes(kind.toLowerCase()) &&
          c.includes('-l app.kubernetes.io/part-of=vmpool') &&
          (ns === undefined ? !c.includes(' -n ') : c.includes(` -n ${ns}`)),
      );
    expect(commands).toContain(`kubectl delete namespace ${NAMESPACE}`);
    for (const dir of [...DIRS.filter((d) => d !== 'knative/crd'), WITH_EVENTS]) {
      for (const o of objectsOf(dir)) {
        if (o.kind === 'Namespace' && o.metadata.name === NAMESPACE) continue;
        if (o.metadata.namespace === NAMESPACE) continue; // deleted with the namespace
        expect(o.metadata.labels?.['app.kubernetes.io/part-of'], `${dir}: ${ident(o)}`).toBe(
          'vmpool',
        );
        expect(byLabel(o.kind, o.metadata.namespace), `${dir}: ${ident(o)} not uninstalled`).toBe(
          true,
        );
      }
    }
  });
});

describe('knative/base', () => {
  it('ships these objects and RBAC verbs', () => {
    const objects = objectsOf('knative/base');
    expect(objects.map(ident)).toMatchSnapshot('objects');
    expect(rbacVerbs(objects)).toMatchSnapshot('rbac');
  });

  it('grants only what the features it enables use: no TokenReview with the CloudEvent form off', () => {
    const verbs = Object.values(rbacVerbs(objectsOf('knative/base'))).flat();
    expect(verbs.filter((v) => v.startsWith('authentication.k8s.io/tokenreviews'))).toEqual([]);
  });

  it('ships no EventPolicy: Knative marks one not Ready while authentication-oidc is off, and the Broker with it', () => {
    expect(byKind(objectsOf('knative/base'), 'EventPolicy')).toEqual([]);
  });

  it("with the oidc component, admits each of its own sources into the Broker with that source's event types only", () => {
    const objects = objectsOf(WITH_EVENTS);
    const policies = byKind(objects, 'EventPolicy').filter(
      (p) => p.metadata.name !== 'vmpool-broker',
    );
    const refOf = (f: { ref?: { kind: string; name: string } }): string =>
      f.ref === undefined ? 'not a ref' : `${f.ref.kind}/${f.ref.name}`;
    const admitted = policies.flatMap((p) =>
      (at(p, 'spec', 'from') as { ref?: { kind: string; name: string } }[]).map(refOf),
    );
    const sources = objects
      .filter((o) => o.kind === 'ApiServerSource' || o.kind === 'PingSource')
      .map((o) => `${o.kind}/${o.metadata.name}`);
    expect(admitted.sort()).toEqual(sources.sort());
    for (const p of policies)
      expect(at(p, 'spec', 'to')).toEqual([
        { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'vmpool' } },
      ]);
    const filters = Object.fromEntries(
      policies.map((p) => [p.metadata.name, at(p, 'spec', 'filters')]),
    );
    expect(filters).toEqual({
      'vmpool-ticks': [{ exact: { type: 'dev.knative.sources.ping' } }],
      'vmpool-watch': [{ prefix: { type: 'dev.knative.apiserver.' } }],
    });
  });

  it('agrees with the code: bundles, webhook paths, API group, accounts', () => {
    const objects = objectsOf('knative/base');
    const accounts = new Set(
      byKind(objects, 'ServiceAccount').map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
    );
    const started = new Set<string>();
    for (const w of [...byKind(objects, 'Deployment'), ...byKind(objects, 'Service')]) {
      const pod = at(w, 'spec', 'template', 'spec');
      const containers = at(pod, 'containers') as { image: string; args?: string[] }[] | undefined;
      const c = containers?.[0];
      if (c === undefined || !c.image.startsWith('vmpool')) continue;
      expect(c.image).toBe('vmpool');
      // Started as the image starts it (scripts/image-start.ts): its own snapshot.
      const bundle = FUNCTIONS.find(
        (f) => JSON.stringify(imageStart(f).args) === JSON.stringify(c.args ?? []),
      );
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
    expect(paths).toEqual([POOL_PATH, SCALE_PATH, CLAIM_PATH]);

    for (const dir of DIRS.filter((d) => d.endsWith('/apiservice'))) {
      const [apiService] = byKind(objectsOf(dir), 'APIService');
      expect(at(apiService, 'spec', 'group')).toBe(groupOf(dir));
      expect(at(apiService, 'spec', 'service')).toEqual({
        name: 'scale-down-with',
        namespace: NAMESPACE,
        port: 443,
      });
    }

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

describe('the TLS overlays', () => {
  it('cert-manager: the CA is injected into the webhook and the APIService, both DNS names issued', () => {
    const objects = objectsOf('knative/overlays/cert-manager');
    const base = objectsOf('knative/base').map(ident);
    expect(objects.map(ident).filter((i) => !base.includes(i))).toMatchSnapshot('added objects');
    const injected = [
      ...byKind(objects, 'ValidatingWebhookConfiguration'),
      ...byKind(objectsOf('knative/overlays/cert-manager/apiservice'), 'APIService'),
    ];
    expect(injected).toHaveLength(2);
    for (const o of injected)
      expect(o.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(
        `${NAMESPACE}/vmpool-serving`,
      );
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

  it("plain-tls: the Secret is the admin's files and both caBundles are their ca.crt", () => {
    const files = join(checkout, 'knative/overlays/plain-tls/certs');
    const b64 = (f: string) => readFileSync(join(files, f)).toString('base64');
    const flat = (v: unknown) => String(v).replace(/\s/g, '');
    const objects = objectsOf('knative/overlays/plain-tls');
    const [secret] = byKind(objects, 'Secret');
    expect(secret?.metadata.name).toBe('vmpool-tls');
    expect(secret?.type).toBe('kubernetes.io/tls');
    for (const f of ['tls.crt', 'tls.key', 'ca.crt'])
      expect(flat(at(secret, 'data', f)), f).toBe(b64(f));
    const [hook] = byKind(objects, 'ValidatingWebhookConfiguration');
    for (const w of at(hook, 'webhooks') as unknown[])
      expect(flat(at(w, 'clientConfig', 'caBundle'))).toBe(b64('ca.crt'));
    const [api] = byKind(objectsOf('knative/overlays/plain-tls/apiservice'), 'APIService');
    expect(flat(at(api, 'spec', 'caBundle'))).toBe(b64('ca.crt'));
    // Keys never reach git: the repository's copy of the directory ignores them.
    const ignored = readFileSync(
      join(REPO_ROOT, 'knative/overlays/plain-tls/certs/.gitignore'),
      'utf8',
    ).split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['*.crt', '*.key']));
  });

  it('the webhook and the APIService name the Services whose DNS names the certificates carry', () => {
    const hook = byKind(objectsOf('knative/base'), 'ValidatingWebhookConfiguration')[0]!;
    const api = byKind(objectsOf('knative/overlays/plain-tls/apiservice'), 'APIService')[0]!;
    const dnsOf = (svc: unknown) =>
      `${String(at(svc, 'name'))}.${String(at(svc, 'namespace'))}.svc`;
    const names = [
      ...(at(hook, 'webhooks') as unknown[]).map((w) => dnsOf(at(w, 'clientConfig', 'service'))),
      dnsOf(at(api, 'spec', 'service')),
    ];
    const serving = byKind(objectsOf('knative/overlays/cert-manager'), 'Certificate').find(
      (c) => c.metadata.name === 'vmpool-serving',
    );
    expect(at(serving, 'spec', 'dnsNames')).toEqual(expect.arrayContaining(names));
    const script = readFileSync(
      join(REPO_ROOT, 'knative/overlays/plain-tls/certs/self-signed.sh'),
      'utf8',
    );
    for (const n of names) expect(script).toContain(`DNS:${n}`);
  });
});

describe('knative/overlays/podmonitor', () => {
  it("selects vmpool's pods and scrapes ports they have", () => {
    const base = objectsOf('knative/base');
    const pods = [...byKind(base, 'Deployment'), ...base.filter((o) => o.kind === 'Service')]
      .map((w) => ({
        labels: (at(w, 'spec', 'template', 'metadata', 'labels') ?? {}) as Record<string, string>,
        ports: (
          (at(w, 'spec', 'template', 'spec', 'containers', 0, 'ports') ?? []) as { name: string }[]
        ).map((p) => p.name),
        knative: w.apiVersion.startsWith('serving.knative.dev/'),
      }))
      .filter((p) => p.labels['app.kubernetes.io/part-of'] === 'vmpool');
    for (const pm of byKind(objectsOf('knative/overlays/podmonitor'), 'PodMonitor')) {
      const exprs = at(pm, 'spec', 'selector', 'matchExpressions') as {
        key: string;
        values: string[];
      }[];
      const selected = pods.filter((p) =>
        exprs.every((e) => e.values.includes(p.labels[e.key] ?? '')),
      );
      expect(selected.length, pm.metadata.name).toBe(2);
      for (const ep of at(pm, 'spec', 'podMetricsEndpoints') as { port: string }[])
        for (const p of selected) {
          // Knative renames a Knative Service's container port to `user-port` in its pods.
          if (p.knative) expect(ep.port).toBe('user-port');
          else expect(p.ports).toContain(ep.port);
        }
    }
  });
});

describe('functions/*/func.yaml of the two HTTPS functions', () => {
  it.each(['scale-validate', 'scale-down-with'])(
    '%s says it is deployed by knative/base and has no deploy or build settings',
    (name) => {
      const text = readFileSync(join(REPO_ROOT, 'functions', name, 'func.yaml'), 'utf8');
      const doc = parse(text) as Record<string, unknown>;
      expect(doc.name).toBe(name);
      expect(doc.deploy).toBeUndefined();
      expect(doc.build).toBeUndefined();
      expect(doc.run).toBeUndefined();
      expect(text).toMatch(/NOT deployable with `func deploy`/);
      expect(text).toContain(`knative/base (deploy-${name}.yaml`);
    },
  );
});

describe('knative/base: network exposure and scheduling', () => {
  const base = () => objectsOf('knative/base');
  const policies = () => byKind(base(), 'NetworkPolicy');
  /** The `key In values` of a podSelector. */
  const selected = (o: K8sObject, key: string): string[] =>
    (
      (at(o, 'spec', 'podSelector', 'matchExpressions') ?? []) as {
        key: string;
        values: string[];
      }[]
    ).find((e) => e.key === key)?.values ?? [];

  it('the functions fed by events admit only the Knative data plane, and every vmpool pod is covered', () => {
    const [eventFed] = policies().filter((p) =>
      selected(p, 'serving.knative.dev/service').includes('reconcile-pool'),
    );
    expect(selected(eventFed!, 'serving.knative.dev/service').sort()).toEqual(
      byKind(base(), 'Service')
        .filter((o) => o.apiVersion.startsWith('serving.knative.dev'))
        .map((o) => o.metadata.name)
        .sort(),
    );
    expect(at(eventFed, 'spec', 'policyTypes')).toEqual(['Ingress']);
    expect(at(eventFed, 'spec', 'ingress')).toEqual([
      {
        from: [
          {
            namespaceSelector: {
              matchExpressions: [
                {
                  key: 'kubernetes.io/metadata.name',
                  operator: 'In',
                  values: ['knative-eventing', 'knative-serving', 'kourier-system'],
                },
              ],
            },
          },
        ],
      },
    ]);
    const deployments = byKind(base(), 'Deployment').map((d) => d.metadata.name);
    const [facing] = policies().filter((p) =>
      selected(p, 'app.kubernetes.io/component').includes('scale-validate'),
    );
    expect(selected(facing!, 'app.kubernetes.io/component').sort()).toEqual(deployments.sort());
    // The API server reaches the HTTPS port (the rule an admin may narrow), and nothing else is open.
    expect(at(facing, 'spec', 'ingress')).toEqual([{ ports: [{ protocol: 'TCP', port: 8443 }] }]);
    for (const d of byKind(base(), 'Deployment'))
      expect(
        (
          at(d, 'spec', 'template', 'spec', 'containers', 0, 'ports') as { containerPort: number }[]
        ).map((p) => p.containerPort),
      ).toEqual([8443]);
  });

  it('the webhook and the aggregated API prefer different nodes and are scheduled ahead of ordinary workloads', () => {
    const [priority] = byKind(base(), 'PriorityClass');
    expect(priority?.metadata.labels?.['app.kubernetes.io/part-of']).toBe('vmpool');
    const value = (priority as unknown as { value: number; globalDefault: boolean }).value;
    expect(value).toBeGreaterThanOrEqual(1_000_000);
    expect(value).toBeLessThan(1_000_000_000);
    expect((priority as unknown as { globalDefault: boolean }).globalDefault).toBe(false);
    for (const d of byKind(base(), 'Deployment')) {
      const pod = at(d, 'spec', 'template', 'spec');
      expect(at(pod, 'priorityClassName')).toBe(priority?.metadata.name);
      expect(at(d, 'spec', 'replicas')).toBe(2);
      const own = at(d, 'spec', 'template', 'metadata', 'labels');
      expect(at(pod, 'affinity', 'podAntiAffinity')).toEqual({
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: own },
            },
          },
        ],
      });
      expect(at(pod, 'containers', 0, 'readinessProbe', 'httpGet', 'path')).toBe(
        '/health/readiness',
      );
    }
  });

  it("the webhook's timeout leaves room after the review's API budget", () => {
    const [webhook] = byKind(base(), 'ValidatingWebhookConfiguration');
    for (const w of at(webhook, 'webhooks') as { timeoutSeconds: number }[])
      expect(w.timeoutSeconds * 1000).toBeGreaterThanOrEqual(ADMISSION_BUDGET.totalMs + 3_000);
  });
});

describe('knative/overlays/scaledownwith-events (on a copy of overlays/example)', () => {
  const objects = () => objectsOf(WITH_EVENTS);
  const find = (kind: string, name: string): K8sObject => {
    const o = objects().find((x) => x.kind === kind && x.metadata.name === name);
    if (o === undefined) throw new Error(`${kind} ${name} not rendered`);
    return o;
  };

  it('is accepted object by object by a server-side dry-run (the real Trigger CRD, EventPolicy)', async () => {
    const { text } = rendered(WITH_EVENTS);
    const lines = await dryRun(text);
    expect(lines).toHaveLength(objects().length);
    for (const l of lines) expect(l).toMatch(/ serverside-applied \(server dry run\)$/);
    expect(objects().length).toBeGreaterThan(objectsOf('knative/overlays/example').length);
  });

  it('serves the event on a port of its own, for the audience the Trigger sends, reachable from knative-eventing only', () => {
    const container = at(
      find('Deployment', 'scale-down-with'),
      'spec',
      'template',
      'spec',
      'containers',
      0,
    );
    const env = Object.fromEntries(
      (at(container, 'env') as { name: string; value: string }[]).map((e) => [e.name, e.value]),
    );
    expect(env).toMatchObject({
      SCALEDOWNWITH_EVENTS: 'enabled',
      EVENTS_PORT: '8080',
      EVENTS_AUDIENCE: DEFAULT_EVENTS_AUDIENCE,
      EVENTS_SENDER_AUDIENCE: DEFAULT_SENDER_AUDIENCE,
      PORT: '8443',
    });
    const ports = at(container, 'ports') as { name: string; containerPort: number }[];
    expect(ports.map((p) => `${p.name}:${String(p.containerPort)}`).sort()).toEqual([
      'events:8080',
      'https:8443',
    ]);
    const service = find('Service', 'scale-down-with');
    expect(at(service, 'spec', 'ports')).toEqual(
      expect.arrayContaining([
        { name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' },
        { name: 'events', port: 80, targetPort: 'events', protocol: 'TCP' },
      ]),
    );
    const trigger = find('Trigger', 'vmpool-scaledownwith');
    expect(at(trigger, 'spec', 'filters')).toEqual([{ exact: { type: SCALE_DOWN_WITH_EVENT } }]);
    expect(at(trigger, 'spec', 'subscriber')).toEqual({
      ref: { apiVersion: 'v1', kind: 'Service', name: 'scale-down-with' },
      audience: DEFAULT_EVENTS_AUDIENCE,
    });
    expect(at(find('NetworkPolicy', 'vmpool-scaledownwith-events'), 'spec', 'ingress')).toEqual([
      {
        from: [
          {
            namespaceSelector: {
              matchLabels: { 'kubernetes.io/metadata.name': 'knative-eventing' },
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ]);
  });

  it('the EventPolicy admits the senders listed, with scaledownwith events only', () => {
    const policy = find('EventPolicy', 'vmpool-broker');
    expect(at(policy, 'spec', 'to')).toEqual([
      { ref: { apiVersion: 'eventing.knative.dev/v1', kind: 'Broker', name: 'vmpool' } },
    ]);
    // vmpool's own sources come in through knative/base's policies, each with its own types.
    const from = at(policy, 'spec', 'from') as { ref?: unknown; sub?: string }[];
    expect(from.filter((f) => f.ref !== undefined)).toEqual([]);
    expect(from.length).toBeGreaterThan(0);
    expect(at(policy, 'spec', 'filters')).toEqual([{ exact: { type: SCALE_DOWN_WITH_EVENT } }]);
  });

  it('grants no namespace to events by default; scale-down-with may review tokens', () => {
    const bindings = [
      ...byKind(objects(), 'RoleBinding'),
      ...byKind(objects(), 'ClusterRoleBinding'),
    ];
    expect(
      bindings.filter(
        (b) => (at(b, 'roleRef', 'name') as string) === 'vmpool-scaledownwith-events',
      ),
    ).toEqual([]);
    expect(
      at(find('ClusterRoleBinding', 'vmpool-scale-down-with-tokenreview'), 'subjects'),
    ).toEqual([{ kind: 'ServiceAccount', name: 'scale-down-with', namespace: NAMESPACE }]);
    expect(rbacVerbs([find('ClusterRole', 'vmpool-scale-down-with-tokenreview')])).toEqual({
      'ClusterRole vmpool-scale-down-with-tokenreview': [
        'authentication.k8s.io/tokenreviews: create',
      ],
    });
  });
});
