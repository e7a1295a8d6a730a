import nock from 'nock';
import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachinePool } from '../../shared/api/index.js';
import { keys } from '../../shared/api/index.js';
import { API, BASE, guardNock, statusBody, testKube } from '../../test/functions/fixtures.js';
import { pool, runnersDiskTemplates, runnersVmTemplate, vm } from '../../test/unit/builders.js';
import { DEFAULT_RECORDER, explicitReplicasMessage } from '../../shared/domain/index.js';
import {
  ADMISSION_BUDGET,
  ADMISSION_MAX_BODY_BYTES,
  WEBHOOK_TIMEOUT_MS,
} from '../../shared/reconcile/index.js';
import { POOL_PATH, SCALE_PATH, buildValidateApp } from './app.js';
import { testLog } from '../../test/logs.js';

const GROUP = 'virtualization.deckhouse.io';
const poolPath = (ns: string, name: string): string =>
  `${BASE}/namespaces/${ns}/virtualmachinepools/${name}`;

interface ReviewResponse {
  apiVersion: string;
  kind: string;
  response: {
    uid: string;
    allowed: boolean;
    status?: { code: number; message: string; reason?: string };
  };
}

function build() {
  return buildValidateApp({ kube: testKube(), log: testLog('test') });
}

function review(request: Record<string, unknown>): object {
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request };
}

function scaleReview(from: number, to: number, name = 'runners', uid = 'uid-scale-1'): object {
  const scale = (replicas: number) => ({
    apiVersion: 'autoscaling/v1',
    kind: 'Scale',
    metadata: { name, namespace: 'ci' },
    spec: { replicas },
    status: { replicas: from },
  });
  return review({
    uid,
    kind: { group: 'autoscaling', version: 'v1', kind: 'Scale' },
    resource: { group: GROUP, version: 'v1alpha2', resource: 'virtualmachinepools' },
    subResource: 'scale',
    name,
    namespace: 'ci',
    operation: 'UPDATE',
    userInfo: { username: 'alice' },
    object: scale(to),
    oldObject: scale(from),
  });
}

function poolReview(
  operation: 'CREATE' | 'UPDATE',
  object: VirtualMachinePool,
  oldObject?: VirtualMachinePool,
  uid = 'uid-pool-1',
  username = 'alice',
): object {
  return review({
    uid,
    kind: { group: GROUP, version: 'v1alpha2', kind: 'VirtualMachinePool' },
    resource: { group: GROUP, version: 'v1alpha2', resource: 'virtualmachinepools' },
    name: object.metadata.name,
    namespace: object.metadata.namespace,
    operation,
    userInfo: { username },
    object,
    ...(oldObject === undefined ? {} : { oldObject }),
  });
}

async function post(
  path: string,
  body: object | string,
): Promise<{ status: number; review: ReviewResponse }> {
  const res = await build().request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, review: (await res.json()) as ReviewResponse };
}

const unmatched = guardNock();

/** `text` as a literal in a RegExp. */
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('scale-validate: how far one write may grow a pool', () => {
  it('a scale above the cluster-wide maximum is refused naming the maximum and where it is set', async () => {
    const { review: r } = await post(SCALE_PATH, scaleReview(1, 100_000));
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(422);
    expect(r.response.status?.message).toContain('100000 is above');
    expect(r.response.status?.message).toContain('10000 replicas');
    expect(r.response.status?.message).toContain('VMPOOL_MAX_REPLICAS');
    expect(unmatched.seen).toEqual([]);
  });

  it('a pool created or updated above the maximum is refused; the maximum is configurable', async () => {
    const big = pool({ replicas: 50 });
    const app = buildValidateApp({ kube: testKube(), log: testLog('test'), maxReplicas: 20 });
    const res = await app.request(POOL_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(poolReview('UPDATE', big, pool({ replicas: 5 }))),
    });
    const r = (await res.json()) as ReviewResponse;
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.message).toContain('20 replicas');
    // Taking a mistake back is never refused, however large the pool still is.
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, pool({ replicas: 50 }));
    const back = await app.request(SCALE_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(scaleReview(50, 30)),
    });
    expect(((await back.json()) as ReviewResponse).response.allowed).toBe(true);
    scope.done();
  });

  it('growing more than tenfold in one change is allowed with a warning kubectl shows', async () => {
    const { review: r } = await post(SCALE_PATH, scaleReview(2, 5_000, 'runners', 'uid-big'));
    expect(r.response).toMatchObject({ uid: 'uid-big', allowed: true });
    const warnings = (r.response as { warnings?: string[] }).warnings ?? [];
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('from 2 to 5000 replicas, more than tenfold');
    const { review: small } = await post(SCALE_PATH, scaleReview(0, 100));
    expect(small.response).toEqual({ uid: 'uid-scale-1', allowed: true });
  });
});

describe('scale-validate: /scale', () => {
  it('a decrease on an Explicit pool is denied with the reference message, uid echoed', async () => {
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, pool({ scaleDownPolicy: 'Explicit', replicas: 3 }));
    const { status, review: r } = await post(SCALE_PATH, scaleReview(3, 2, 'runners', 'uid-42'));
    expect(status).toBe(200);
    expect(r.apiVersion).toBe('admission.k8s.io/v1');
    expect(r.kind).toBe('AdmissionReview');
    expect(r.response.uid).toBe('uid-42');
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(403);
    expect(r.response.status?.message).toBe(
      'VirtualMachinePool "runners" uses scaleDownPolicy Explicit: decreasing replicas through the scale subresource is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.',
    );
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('an increase is allowed without an API call', async () => {
    const { review: r } = await post(SCALE_PATH, scaleReview(2, 5, 'runners', 'uid-up'));
    expect(r.response).toEqual({ uid: 'uid-up', allowed: true });
    expect(unmatched.seen).toEqual([]);
  });

  it('an unchanged replicas count is allowed without an API call', async () => {
    const { review: r } = await post(SCALE_PATH, scaleReview(2, 2));
    expect(r.response.allowed).toBe(true);
    expect(unmatched.seen).toEqual([]);
  });

  it('a decrease on a NewestFirst pool is allowed (after reading the pool)', async () => {
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, pool({ replicas: 3 }));
    const { review: r } = await post(SCALE_PATH, scaleReview(3, 1));
    expect(r.response).toEqual({ uid: 'uid-scale-1', allowed: true });
    scope.done();
  });

  it('a decrease on a pool that is not found is allowed', async () => {
    const scope = nock(API)
      .get(poolPath('ci', 'ghost'))
      .reply(404, statusBody(404, 'NotFound', 'virtualmachinepools "ghost" not found'));
    const { review: r } = await post(SCALE_PATH, scaleReview(3, 1, 'ghost'));
    expect(r.response.allowed).toBe(true);
    scope.done();
  });

  it('a pool read failing with 500 is a denial with code 500', async () => {
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .times(ADMISSION_BUDGET.attempts)
      .reply(500, statusBody(500, 'InternalError', 'etcd is sad'));
    const { review: r } = await post(SCALE_PATH, scaleReview(3, 1));
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(500);
    expect(r.response.status?.message).toContain('etcd is sad');
    scope.done();
  });

  it('Scale objects that cannot be decoded: denied with 400', async () => {
    const bad = scaleReview(3, 1) as { request: { object: unknown } };
    bad.request.object = { kind: 'Scale', spec: { replicas: 'many' } };
    const { review: r } = await post(SCALE_PATH, bad);
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(400);
    expect(unmatched.seen).toEqual([]);
  });
});

describe('scale-validate: pool CREATE and UPDATE', () => {
  it('a valid CREATE is checked by a dry-run create of the VM it produces, then allowed', async () => {
    const p = pool();
    let query: Record<string, unknown> = {};
    let sent: VirtualMachine | undefined;
    const scope = nock(API)
      .post(`${BASE}/namespaces/ci/virtualmachines`, (body: VirtualMachine) => {
        sent = body;
        return true;
      })
      .query((q) => {
        query = q;
        return true;
      })
      .reply(201, (_uri, body) => body as object);
    const { review: r } = await post(POOL_PATH, poolReview('CREATE', p));
    expect(r.response).toEqual({ uid: 'uid-pool-1', allowed: true });
    scope.done();
    expect(query).toEqual({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' });
    expect(sent).toEqual({
      apiVersion: 'virtualization.deckhouse.io/v1alpha2',
      kind: 'VirtualMachine',
      metadata: { generateName: 'runners-', namespace: 'ci' },
      spec: runnersVmTemplate().spec,
    });
    expect(unmatched.seen).toEqual([]);
  });

  it('fields the VM API would drop come back as warnings on the pool, the write allowed', async () => {
    const scope = nock(API)
      .post(`${BASE}/namespaces/ci/virtualmachines`)
      .query({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' })
      .reply(201, (_uri, body) => body as object, {
        Warning: '299 - "unknown field \\"spec.cpus\\""',
      });
    const { review: r } = await post(POOL_PATH, poolReview('CREATE', pool()));
    scope.done();
    expect(r.response).toEqual({
      uid: 'uid-pool-1',
      allowed: true,
      warnings: ['unknown field "spec.virtualMachineTemplate.spec.cpus"'],
    });
  });

  it('the template labels and annotations go on the synthetic VM', async () => {
    const template = {
      ...runnersVmTemplate(),
      metadata: { labels: { team: 'ci' }, annotations: { note: 'x' } },
    };
    const p = pool({ virtualMachineTemplate: template });
    let sent: VirtualMachine | undefined;
    const scope = nock(API)
      .post(`${BASE}/namespaces/ci/virtualmachines`, (body: VirtualMachine) => {
        sent = body;
        return true;
      })
      .query({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' })
      .reply(201, (_uri, body) => body as object);
    const { review: r } = await post(POOL_PATH, poolReview('CREATE', p));
    expect(r.response.allowed).toBe(true);
    scope.done();
    expect(sent?.metadata).toEqual({
      generateName: 'runners-',
      namespace: 'ci',
      labels: { team: 'ci' },
      annotations: { note: 'x' },
    });
  });

  it('a dry run refused by the VM API (422): denied with its message', async () => {
    const message =
      'admission webhook "vm.virtualization-controller.validate.d8-virtualization" denied the request: the VirtualMachineClass "generic" does not allow 2 cores';
    const scope = nock(API)
      .post(`${BASE}/namespaces/ci/virtualmachines`)
      .query({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' })
      .reply(422, statusBody(422, 'Invalid', message));
    const { review: r } = await post(POOL_PATH, poolReview('CREATE', pool()));
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(422);
    expect(r.response.status?.message).toContain(message);
    scope.done();
  });

  it('a dry run failing transiently: denied with 500 (failurePolicy Fail)', async () => {
    const scope = nock(API)
      .post(`${BASE}/namespaces/ci/virtualmachines`)
      .query({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' })
      .times(ADMISSION_BUDGET.attempts)
      .reply(503, statusBody(503, 'ServiceUnavailable', 'try later'));
    const { review: r } = await post(POOL_PATH, poolReview('CREATE', pool()));
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(500);
    scope.done();
  });

  it.each([
    [
      'keep without ttl',
      pool({
        virtualDiskTemplates: runnersDiskTemplates().map((t) =>
          t.name === 'cache' ? { ...t, reclaim: { onScaleDown: 'Retain' as const, keep: 2 } } : t,
        ),
      }),
      'keep requires ttl; without ttl free disks are never garbage-collected, so keep would have no effect',
    ],
    [
      'osType Legacy',
      pool({
        virtualMachineTemplate: {
          spec: { ...runnersVmTemplate().spec, osType: 'Legacy' },
        },
      }),
      'The Legacy osType is not supported in a VirtualMachinePool: replicas of such a pool cannot be told apart, because provisioning is unavailable for these operating systems.',
    ],
    [
      'a 58-character name',
      pool({ name: 'p'.repeat(58) }),
      `VirtualMachinePool name "${'p'.repeat(58)}" is too long: it must be at most 57 characters so that generated VirtualMachine names stay within the 63-character limit`,
    ],
  ])(
    'an invalid CREATE (%s) is denied with the exact message and no API call',
    async (_what, p, message) => {
      const { review: r } = await post(POOL_PATH, poolReview('CREATE', p, undefined, 'uid-bad'));
      expect(r.response.uid).toBe('uid-bad');
      expect(r.response.allowed).toBe(false);
      expect(r.response.status?.message).toBe(message);
      expect(r.response.status?.code).toBe(422);
      expect(unmatched.seen).toEqual([]);
    },
  );

  it('a 57-character name is fine', async () => {
    const name = 'p'.repeat(57);
    const scope = nock(API)
      .post(
        `${BASE}/namespaces/ci/virtualmachines`,
        (body: VirtualMachine) => body.metadata.generateName === `${name}-`,
      )
      .query({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' })
      .reply(201, (_uri, body) => body as object);
    const { review: r } = await post(POOL_PATH, poolReview('CREATE', pool({ name })));
    expect(r.response.allowed).toBe(true);
    scope.done();
  });

  it('an UPDATE lowering spec.replicas of an Explicit pool without recorded targets is denied', async () => {
    const old = pool({ scaleDownPolicy: 'Explicit', replicas: 3 });
    const next = pool({ scaleDownPolicy: 'Explicit', replicas: 2 });
    const { review: r } = await post(POOL_PATH, poolReview('UPDATE', next, old));
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(403);
    expect(r.response.status?.message).toBe(
      'VirtualMachinePool "runners" uses scaleDownPolicy Explicit: decreasing spec.replicas without naming the replicas to remove is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.',
    );
    expect(unmatched.seen).toEqual([]);
  });

  it('an UPDATE by scale-down-with whose new targets cover the decrease is allowed once they are read as live members, with no dry run', async () => {
    const old = pool({ scaleDownPolicy: 'Explicit', replicas: 3 });
    const next = pool({
      scaleDownPolicy: 'Explicit',
      replicas: 1,
      annotations: {
        [keys.scaleDownTargets]: JSON.stringify([
          { name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' },
          { name: 'runners-bbbbb', uid: 'uid-runners-bbbbb' },
        ]),
      },
    });
    const scope = nock(API)
      .get(`${BASE}/namespaces/ci/virtualmachines/runners-aaaaa`)
      .reply(200, vm(old, 'runners-aaaaa'))
      .get(`${BASE}/namespaces/ci/virtualmachines/runners-bbbbb`)
      .reply(200, vm(old, 'runners-bbbbb'));
    const { review: r } = await post(
      POOL_PATH,
      poolReview('UPDATE', next, old, 'uid-pool-1', DEFAULT_RECORDER),
    );
    expect(r.response).toEqual({ uid: 'uid-pool-1', allowed: true });
    scope.done();
    // The template is unchanged: no dry-run create was sent.
    expect(unmatched.seen).toEqual([]);
  });

  describe('a forged Explicit target is refused', () => {
    const old = pool({ scaleDownPolicy: 'Explicit', replicas: 3 });
    const naming = (uid: string) =>
      pool({
        scaleDownPolicy: 'Explicit',
        replicas: 2,
        annotations: {
          [keys.scaleDownTargets]: JSON.stringify([{ name: 'runners-aaaaa', uid }]),
        },
      });
    const vmPath = `${BASE}/namespaces/ci/virtualmachines/runners-aaaaa`;

    it('written by anyone but scale-down-with: refused with the Explicit message, nothing read', async () => {
      const { review: r } = await post(POOL_PATH, poolReview('UPDATE', naming('uid-a'), old));
      expect(r.response.allowed).toBe(false);
      expect(r.response.status?.code).toBe(403);
      expect(r.response.status?.message).toBe(
        `${explicitReplicasMessage('runners')} Not a scaleDownWith target: targets may be added only by ${DEFAULT_RECORDER}, not by alice.`,
      );
      expect(unmatched.seen).toEqual([]);
    });

    it.each([
      ['a made-up uid', 200, (p: VirtualMachinePool) => vm(p, 'runners-aaaaa', { uid: 'real' })],
      ['a VM that does not exist', 404, () => statusBody(404, 'NotFound', 'not found')],
      [
        'another pool’s VM',
        200,
        () => vm(pool({ name: 'other', uid: 'pool-uid-2' }), 'runners-aaaaa', { uid: 'made-up' }),
      ],
      [
        'a Terminating member',
        200,
        (p: VirtualMachinePool) => vm(p, 'runners-aaaaa', { uid: 'made-up', terminating: true }),
      ],
    ])('even from scale-down-with, naming %s', async (_what, code, body) => {
      const scope = nock(API).get(vmPath).reply(code, body(old));
      const { review: r } = await post(
        POOL_PATH,
        poolReview('UPDATE', naming('made-up'), old, 'uid-pool-1', DEFAULT_RECORDER),
      );
      expect(r.response.allowed).toBe(false);
      expect(r.response.status?.code).toBe(403);
      expect(r.response.status?.message).toMatch(
        new RegExp(
          `^${escape(explicitReplicasMessage('runners'))} Not a scaleDownWith target: target "runners-aaaaa" `,
        ),
      );
      scope.done();
    });

    it('a VM that cannot be read: refused with what could not be checked (500)', async () => {
      const scope = nock(API)
        .get(vmPath)
        .reply(
          403,
          statusBody(
            403,
            'Forbidden',
            'virtualmachines "runners-aaaaa" is forbidden: User "system:serviceaccount:vmpool-system:scale-validate" cannot get resource "virtualmachines"',
          ),
        );
      const { review: r } = await post(
        POOL_PATH,
        poolReview('UPDATE', naming('uid-runners-aaaaa'), old, 'uid-pool-1', DEFAULT_RECORDER),
      );
      expect(r.response.allowed).toBe(false);
      expect(r.response.status?.code).toBe(500);
      expect(r.response.status?.message).toMatch(
        /^cannot read the scaleDownWith targets of VirtualMachinePool "runners": /,
      );
      scope.done();
    });

    it('the recorder is configurable: `*` lets any writer, members still checked', async () => {
      const app = buildValidateApp({ kube: testKube(), log: testLog('test'), recorder: '*' });
      const scope = nock(API).get(vmPath).reply(200, vm(old, 'runners-aaaaa'));
      const res = await app.request(POOL_PATH, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(poolReview('UPDATE', naming('uid-runners-aaaaa'), old)),
      });
      expect(((await res.json()) as ReviewResponse).response.allowed).toBe(true);
      scope.done();
    });
  });

  it('an UPDATE whose targets cover only part of the decrease is denied', async () => {
    const old = pool({ scaleDownPolicy: 'Explicit', replicas: 3 });
    const next = pool({
      scaleDownPolicy: 'Explicit',
      replicas: 1,
      annotations: {
        [keys.scaleDownTargets]: JSON.stringify([{ name: 'runners-aaaaa', uid: 'uid-a' }]),
      },
    });
    const { review: r } = await post(POOL_PATH, poolReview('UPDATE', next, old));
    expect(r.response.allowed).toBe(false);
    expect(unmatched.seen).toEqual([]);
  });

  it('an UPDATE that changes the template is dry-run again', async () => {
    const old = pool();
    const template = runnersVmTemplate();
    const next = pool({
      virtualMachineTemplate: { ...template, spec: { ...template.spec, cpu: { cores: 4 } } },
    });
    const scope = nock(API)
      .post(
        `${BASE}/namespaces/ci/virtualmachines`,
        (body: { spec: { cpu?: { cores?: number } } }) => body.spec.cpu?.cores === 4,
      )
      .query({ dryRun: 'All', fieldManager: 'vmpool', fieldValidation: 'Warn' })
      .reply(201, (_uri, body) => body as object);
    const { review: r } = await post(POOL_PATH, poolReview('UPDATE', next, old));
    expect(r.response.allowed).toBe(true);
    scope.done();
  });
});

describe('scale-validate: requests it cannot or need not judge', () => {
  it('a malformed review with a uid: AdmissionReview allowed false, code 400', async () => {
    const res = await build().request(POOL_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: 'uid-malformed', operation: 'CREATE' },
      }),
    });
    expect(res.status).toBe(200);
    const r = (await res.json()) as ReviewResponse;
    expect(r.response.uid).toBe('uid-malformed');
    expect(r.response.allowed).toBe(false);
    expect(r.response.status?.code).toBe(400);
    expect(r.response.status?.message).toMatch(/^malformed AdmissionReview/);
    expect(unmatched.seen).toEqual([]);
  });

  it('a malformed review without a uid: HTTP 400', async () => {
    const res = await build().request(SCALE_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }),
    });
    expect(res.status).toBe(400);
  });

  it('a body that is not JSON: HTTP 400', async () => {
    const res = await build().request(POOL_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"apiVersion": ',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('body is not JSON');
  });

  it('an unrelated resource is allowed without an API call', async () => {
    const { review: r } = await post(
      POOL_PATH,
      review({
        uid: 'uid-vm',
        kind: { group: GROUP, version: 'v1alpha2', kind: 'VirtualMachine' },
        resource: { group: GROUP, version: 'v1alpha2', resource: 'virtualmachines' },
        name: 'vm1',
        namespace: 'ci',
        operation: 'CREATE',
        object: { whatever: true },
      }),
    );
    expect(r.response).toEqual({ uid: 'uid-vm', allowed: true });
    expect(unmatched.seen).toEqual([]);
  });

  it('a DELETE of a pool is allowed without an API call', async () => {
    const { review: r } = await post(
      POOL_PATH,
      review({
        uid: 'uid-del',
        kind: { group: GROUP, version: 'v1alpha2', kind: 'VirtualMachinePool' },
        resource: { group: GROUP, version: 'v1alpha2', resource: 'virtualmachinepools' },
        name: 'runners',
        namespace: 'ci',
        operation: 'DELETE',
        oldObject: pool(),
      }),
    );
    expect(r.response.allowed).toBe(true);
    expect(unmatched.seen).toEqual([]);
  });
});

describe('scale-validate: inside its own deadline', () => {
  it(
    'a slow API server: the webhook denies with a clear message before the API server gives up',
    async () => {
      const slow = nock(API)
        .post(`${BASE}/namespaces/ci/virtualmachines`)
        .query(true)
        .times(ADMISSION_BUDGET.attempts)
        .delay(WEBHOOK_TIMEOUT_MS + 5_000)
        .reply(201, {});
      const t0 = performance.now();
      const { status, review: r } = await post(POOL_PATH, poolReview('CREATE', pool()));
      const took = performance.now() - t0;
      expect(status).toBe(200);
      expect(r.response.allowed).toBe(false);
      expect(r.response.status?.message).toMatch(
        /^cannot check the template against the VirtualMachine API: the API server did not answer within 6000 ms/,
      );
      // Answered with room to spare: the API server waits WEBHOOK_TIMEOUT_MS for it.
      expect(took).toBeLessThan(WEBHOOK_TIMEOUT_MS - 3_000);
      slow.persist(false);
      nock.abortPendingRequests();
    },
    WEBHOOK_TIMEOUT_MS + 5_000,
  );

  it('admits an UPDATE review of the largest pool the API server stores (object and oldObject)', async () => {
    // etcd's default request limit is 1.5 MiB: a pool just under it, twice in the review.
    const template = runnersVmTemplate();
    const big = pool({
      virtualMachineTemplate: {
        ...template,
        spec: {
          ...template.spec,
          provisioning: { type: 'UserData', userData: 'x'.repeat(1.5 * 1024 * 1024 - 8 * 1024) },
        },
      },
    });
    const body = JSON.stringify(poolReview('UPDATE', big, big));
    expect(body.length).toBeGreaterThan(3 * 1024 * 1024 - 32 * 1024);
    const { status, review: r } = await post(POOL_PATH, body);
    expect(status).toBe(200);
    expect(r.response.allowed).toBe(true);
    expect(unmatched.seen).toEqual([]);
  });

  it('refuses a body over its own cap with 413', async () => {
    const res = await build().request(POOL_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(ADMISSION_MAX_BODY_BYTES + 1),
    });
    expect(res.status).toBe(413);
  });
});
