/**
 * The decisions of attach mode (local/ownership.ts, local/schema-check.ts, local/wiring.ts) and the
 * raw-JSON manifest funnel (shared/kube/manifests.ts, against nock). The same paths run for real in
 * test/e2e/attach.test.ts.
 */
import nock from 'nock';
import { afterEach, describe, expect, it } from 'vitest';
import type { StoredObject } from '../../shared/api/index.js';
import { OWN_SUBRESOURCES_GROUP, SUBRESOURCES_GROUP, poolCrd } from '../../shared/api/index.js';
import { createManifests } from '../../shared/kube/index.js';
import { kubeConfigFor } from '../../shared/kube/config.js';
import { decideOwned, foreignMessage, provenance, withOwnership } from '../../local/ownership.js';
import { schemaMismatch } from '../../local/schema-check.js';
import { chooseGroup } from '../../local/wiring.js';

const API = 'https://k8s.test';

function stored(labels: Record<string, string>, managers: string[] = []): StoredObject {
  return {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: {
      name: 'v1alpha2.subresources.virtualization.deckhouse.io',
      labels,
      managedFields: managers.map((m) => ({ manager: m, operation: 'Apply' })),
    },
    spec: { service: { namespace: 'd8-virtualization', name: 'virtualization-api' } },
  };
}

describe('ownership', () => {
  it('creates what is missing, updates what is vmpool’s, refuses the rest unless told', () => {
    expect(decideOwned(undefined, false).kind).toBe('create');
    expect(decideOwned(stored({ 'app.kubernetes.io/part-of': 'vmpool' }), false).kind).toBe(
      'update',
    );
    expect(decideOwned(stored({ 'app.kubernetes.io/managed-by': 'vmpool' }), false).kind).toBe(
      'update',
    );
    expect(decideOwned(stored({ heritage: 'deckhouse' }), false).kind).toBe('refuse');
    expect(decideOwned(stored({ heritage: 'deckhouse' }), true).kind).toBe('takeOver');
  });

  it('labels what it creates without changing the input', () => {
    const o = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's', labels: { a: 'b' } } };
    expect(withOwnership(o).metadata.labels).toEqual({
      a: 'b',
      'app.kubernetes.io/part-of': 'vmpool',
      'app.kubernetes.io/managed-by': 'vmpool',
    });
    expect(o.metadata.labels).toEqual({ a: 'b' });
  });

  it('says what exists, who wrote it and what to do', () => {
    const s = stored({ heritage: 'deckhouse', module: 'virtualization' }, ['deckhouse', 'kubectl']);
    expect(provenance(s)).toBe(
      'labels heritage=deckhouse, module=virtualization; written by deckhouse (Apply), kubectl (Apply)',
    );
    expect(foreignMessage({ ...s, name: s.metadata.name ?? '' }, s, 'Do X.')).toBe(
      "APIService/v1alpha2.subresources.virtualization.deckhouse.io exists and is not vmpool's (labels heritage=deckhouse, module=virtualization; written by deckhouse (Apply), kubectl (Apply)); vmpool left it unchanged. Do X.",
    );
  });
});

describe('served schema check', () => {
  it('accepts the generated schema in any key order', () => {
    const crd = poolCrd();
    expect(schemaMismatch(crd, JSON.parse(JSON.stringify(crd)))).toBeUndefined();
  });

  it('names the first x-kubernetes-* key a lossy apply dropped', () => {
    const crd = poolCrd();
    const lossy = JSON.parse(JSON.stringify(crd), (k: string, v: unknown) =>
      k.startsWith('x-kubernetes-') ? undefined : v,
    ) as unknown;
    expect(schemaMismatch(crd, lossy)).toMatch(
      /^version v1alpha2 differs at openAPIV3Schema\..*x-kubernetes-.* \(missing from the served schema\)$/,
    );
  });

  it('names a version that is not served', () => {
    expect(schemaMismatch(poolCrd(), { spec: { versions: [] } })).toBe(
      'version v1alpha2 is not served',
    );
  });
});

describe('chooseGroup', () => {
  it('takes the reference group where it is free or vmpool’s', () => {
    expect(chooseGroup(undefined, undefined).group).toBe(SUBRESOURCES_GROUP);
    expect(chooseGroup(undefined, stored({ 'app.kubernetes.io/part-of': 'vmpool' })).group).toBe(
      SUBRESOURCES_GROUP,
    );
  });

  it('moves to vmpool’s own group where another backend serves it, naming the backend', () => {
    const c = chooseGroup(undefined, stored({ heritage: 'deckhouse' }));
    expect(c.group).toBe(OWN_SUBRESOURCES_GROUP);
    expect(c.why).toContain('Service d8-virtualization/virtualization-api');
    expect(c.why).toContain('left untouched');
  });

  it('obeys an explicit group', () => {
    expect(chooseGroup('pools.example.com', stored({})).group).toBe('pools.example.com');
  });
});

describe('createManifests', () => {
  afterEach(() => {
    nock.cleanAll();
  });

  it('server-side applies the exact JSON, x-kubernetes-* keys included, as vmpool', async () => {
    const crd = poolCrd();
    let sent = '';
    const scope = nock(API)
      .patch(
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/virtualmachinepools.virtualization.deckhouse.io',
      )
      .query({ fieldManager: 'vmpool', force: 'false' })
      .matchHeader('content-type', 'application/apply-patch+yaml')
      .reply(200, (_uri, body) => {
        sent = typeof body === 'string' ? body : JSON.stringify(body);
        return { ...crd, metadata: { ...(crd.metadata as object), uid: 'u' } };
      });
    const out = await createManifests(kubeConfigFor()).apply(crd);
    expect(out.ok).toBe(true);
    scope.done();
    expect(JSON.parse(sent)).toEqual(crd);
    expect(sent).toContain('"x-kubernetes-preserve-unknown-fields":true');
  });

  it('returns failures as values with the API server’s message', async () => {
    nock(API)
      .get('/apis/apiregistration.k8s.io/v1/apiservices/v1alpha2.x')
      .reply(404, { kind: 'Status', reason: 'NotFound', message: 'apiservices "x" not found' });
    const out = await createManifests(kubeConfigFor()).get({
      apiVersion: 'apiregistration.k8s.io/v1',
      kind: 'APIService',
      name: 'v1alpha2.x',
    });
    expect(out).toEqual({
      ok: false,
      reason: 'notFound',
      code: 404,
      message: 'apiservices "x" not found',
    });
  });

  it('deletes with a uid precondition', async () => {
    let body: unknown;
    nock(API)
      .delete('/api/v1/namespaces/ns/services/s')
      .reply(200, (_uri, b) => {
        body = b;
        return {};
      });
    const out = await createManifests(kubeConfigFor()).remove(
      { apiVersion: 'v1', kind: 'Service', name: 's', namespace: 'ns' },
      { uid: 'u1' },
    );
    expect(out.ok).toBe(true);
    expect(body).toMatchObject({ preconditions: { uid: 'u1' } });
  });

  it('refuses kinds it does not know instead of guessing a path', async () => {
    const out = await createManifests(kubeConfigFor()).get({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'x',
    });
    expect(out).toMatchObject({ ok: false, reason: 'invalid' });
  });
});
