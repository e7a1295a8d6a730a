/**
 * RBAC proven live: each function runs as a ServiceAccount bound by knative/base's own role minus one
 * grant it needs, on a plane with OwnerReferencesPermissionEnforcement. It must be refused by the
 * real API server, say so in a clear log line (and, for reconcile-pool, the pool's `Synced`
 * condition and an Event), keep answering (no crash loop, no redelivery storm), and recover once the
 * grant is back, without a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGcApp } from '../../functions/disk-gc-tick/app.js';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import { API_VERSION, CLAIM_API_VERSION, keys } from '../../shared/api/index.js';
import { FORBIDDEN } from '../../shared/domain/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { createKube } from '../../shared/kube/index.js';
import { pingInit } from '../../local/events.js';
import { toYaml } from '../../local/controlplane/kubectl.js';
import { runnersPool } from '../../local/guide.js';
import { testLog } from '../logs.js';
import { startApiserverFacing, scaleDownWithPath } from './apiserver-facing.js';
import type { ApiserverFacing } from './apiserver-facing.js';
import { cluster, dropNamespace, eventually, newNamespace, read, type Obj } from './harness.js';
import type { FunctionName, Rendered } from './rbac.js';
import { FUNCTIONS_NAMESPACE, e2eName, renderBase, serviceAccountKubeConfig } from './rbac.js';

let ns = '';
let rendered: Rendered[] = [];
const made: string[][] = [];

beforeAll(async () => {
  ns = await newNamespace('rbac');
  rendered = await renderBase(cluster().info.binDir);
});
afterAll(async () => {
  for (const what of made.reverse())
    await cluster()
      .kubectl(['delete', '--ignore-not-found', ...what])
      .catch(() => undefined);
  await dropNamespace(ns);
});

interface Denied {
  readonly kube: Kube;
  /** Binds the ServiceAccount to the function's full role as well: the grant is back. */
  restore(): Promise<void>;
}

/**
 * A ServiceAccount `<fn>-denied` (or `account`) bound exactly like `<fn>` in knative/base, except
 * that its ClusterRole lacks `verb` on `resource`. A restored account keeps its full grant: a second
 * test of the same function names an account of its own.
 */
async function withoutGrant(
  fn: FunctionName,
  resource: string,
  verb: string,
  account = `${fn}-denied`,
): Promise<Denied> {
  const sa = account;
  const role = rendered.find((o) => o.kind === 'ClusterRole' && o.metadata.name === `vmpool:${fn}`);
  if (role === undefined) throw new Error(`knative/base has no ClusterRole vmpool:${fn}`);
  const before = role.rules ?? [];
  const rules = before.flatMap((r) => {
    const resources = r.resources as string[] | undefined;
    const verbs = r.verbs as string[];
    if (resources?.includes(resource) !== true || !verbs.includes(verb)) return [r];
    const rest = resources.filter((x) => x !== resource);
    const less = verbs.filter((v) => v !== verb);
    return [
      ...(rest.length > 0 ? [{ ...r, resources: rest }] : []),
      ...(less.length > 0 ? [{ ...r, resources: [resource], verbs: less }] : []),
    ];
  });
  if (JSON.stringify(rules) === JSON.stringify(before))
    throw new Error(`vmpool:${fn} does not grant ${verb} on ${resource}`);
  const deniedRole = `vmpool-e2e:${sa}`;
  // Every binding knative/base gives the function, re-pointed at the denied account and role.
  const bindings = rendered
    .filter(
      (o) =>
        (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') &&
        (o.subjects as Array<{ name: string }> | undefined)?.some((s) => s.name === fn) === true,
    )
    .map((b) => {
      const ref = b.roleRef as { kind: string; name: string; apiGroup: string };
      return {
        ...b,
        metadata: { ...b.metadata, name: `vmpool-e2e:${sa}:${b.metadata.name}` },
        roleRef: ref.name === `vmpool:${fn}` ? { ...ref, name: deniedRole } : ref,
        subjects: [{ kind: 'ServiceAccount', name: sa, namespace: FUNCTIONS_NAMESPACE }],
      };
    });
  const restored = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `vmpool-e2e:${sa}:restored` },
    roleRef: {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: e2eName(`vmpool:${fn}`),
    },
    subjects: [{ kind: 'ServiceAccount', name: sa, namespace: FUNCTIONS_NAMESPACE }],
  };
  const c = cluster();
  await c.applyManifest([
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: sa, namespace: FUNCTIONS_NAMESPACE },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: deniedRole },
      rules,
    },
    ...bindings,
  ]);
  made.push(['-n', FUNCTIONS_NAMESPACE, 'serviceaccount', sa], ['clusterrole', deniedRole]);
  for (const b of bindings)
    made.push(
      b.kind === 'RoleBinding'
        ? ['-n', b.metadata.namespace ?? '', 'rolebinding', b.metadata.name]
        : ['clusterrolebinding', b.metadata.name],
    );
  made.push(['clusterrolebinding', restored.metadata.name]);
  return {
    kube: createKube(await serviceAccountKubeConfig(c.info, sa)),
    restore: async () => {
      await c.applyManifest([restored]);
    },
  };
}

/** Log lines at error level (pino: 50) or above that mention `what`. */
function errorsAbout(lines: readonly string[], what: string): string[] {
  return lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 50 && l.includes(what));
}

async function vmsOf(pool: string): Promise<Obj[]> {
  const out = await cluster().kubectl([
    'get',
    'virtualmachines',
    '-n',
    ns,
    '-l',
    `${keys.pool}=${pool}`,
    '-o',
    'json',
  ]);
  return (JSON.parse(out) as { items: Obj[] }).items;
}

function synced(p: Obj | undefined): { status?: string; reason?: string; message?: string } {
  const conditions = (p?.status as { conditions?: Array<Record<string, string>> } | undefined)
    ?.conditions;
  return conditions?.find((c) => c.type === 'Synced') ?? {};
}

describe('claims: the shipped grants, as the API server judges them', () => {
  const CLAIMS = 'virtualmachineclaims.vmpool.virtualization.deckhouse.io';
  const SA = `system:serviceaccount:${FUNCTIONS_NAMESPACE}:`;
  const sa = (name: string) => `${SA}${name}`;
  /** The API server's SubjectAccessReview answer: `yes` or `no`. */
  const can = async (who: string, verb: string, resource: string, sub?: string) => {
    const [plural = '', ...group] = resource.split('.');
    const review = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: who,
        groups: who.startsWith(SA)
          ? ['system:serviceaccounts', `system:serviceaccounts:${FUNCTIONS_NAMESPACE}`]
          : ['system:authenticated'],
        resourceAttributes: {
          namespace: ns,
          verb,
          group: group.join('.'),
          resource: plural,
          ...(sub === undefined ? {} : { subresource: sub }),
        },
      },
    };
    const out = await cluster().kubectl(['create', '-o', 'json', '-f', '-'], toYaml([review]));
    return (JSON.parse(out) as { status?: { allowed?: boolean } }).status?.allowed === true
      ? 'yes'
      : 'no';
  };

  beforeAll(async () => {
    // Users of the namespace, bound to vmpool's aggregated roles themselves (the plane runs no
    // aggregation controller to fold them into the built-in edit and view).
    const binding = (name: string, role: string) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name }],
    });
    await cluster().applyManifest([
      binding('ci-scheduler', e2eName('vmpool:aggregate-to-edit')),
      binding('auditor', e2eName('vmpool:aggregate-to-view')),
    ]);
  });

  it.each<[string, string, string, string | undefined, string]>([
    // The ApiServerSource adapter watches every claim.
    [sa('vmpool-source-adapter'), 'watch', CLAIMS, undefined, 'yes'],
    [sa('vmpool-source-adapter'), 'list', CLAIMS, undefined, 'yes'],
    [sa('vmpool-source-adapter'), 'update', CLAIMS, undefined, 'no'],
    // reconcile-pool reads claims and writes only their status, and records Events on them.
    [sa('reconcile-pool'), 'get', CLAIMS, undefined, 'no'],
    [sa('reconcile-pool'), 'list', CLAIMS, undefined, 'yes'],
    [sa('reconcile-pool'), 'update', CLAIMS, 'status', 'yes'],
    [sa('reconcile-pool'), 'patch', CLAIMS, 'status', 'no'],
    [sa('reconcile-pool'), 'update', CLAIMS, undefined, 'no'],
    [sa('reconcile-pool'), 'delete', CLAIMS, undefined, 'no'],
    [sa('reconcile-pool'), 'create', 'events.events.k8s.io', undefined, 'yes'],
    // The webhook and the aggregated API need no claim at all (the member's annotation names it).
    [sa('scale-validate'), 'get', CLAIMS, undefined, 'no'],
    [sa('scale-down-with'), 'get', CLAIMS, undefined, 'no'],
    [sa('disk-gc-tick'), 'list', CLAIMS, undefined, 'no'],
    // Whoever may edit workloads takes and gives back members; status is vmpool's.
    ['ci-scheduler', 'create', CLAIMS, undefined, 'yes'],
    ['ci-scheduler', 'delete', CLAIMS, undefined, 'yes'],
    ['ci-scheduler', 'watch', CLAIMS, undefined, 'yes'],
    ['ci-scheduler', 'update', CLAIMS, 'status', 'no'],
    ['auditor', 'list', CLAIMS, undefined, 'yes'],
    ['auditor', 'get', CLAIMS, 'status', 'yes'],
    ['auditor', 'create', CLAIMS, undefined, 'no'],
  ])('%s %s %s (%s): %s', async (who, verb, resource, sub, answer) => {
    expect(await can(who, verb, resource, sub)).toBe(answer);
  });
});

/** reconcile-pool on a kube that lacks a grant: its log lines, and a resync tick of the namespace. */
function deniedReconcile(denied: Denied): { lines: string[]; ping: () => Promise<number> } {
  const lines: string[] = [];
  const app = buildReconcileApp({
    kube: denied.kube,
    log: testLog('reconcile-pool', 'trace', lines),
  });
  const ping = async () =>
    (await app.request('/', pingInit({ namespace: ns }, `/apis/v1/namespaces/${ns}/pingsources/t`)))
      .status;
  return { lines, ping };
}

describe('each function refused when knative/base loses a grant it needs', () => {
  it('reconcile-pool without update on the finalizers: Synced=False Forbidden, an Event, a log line, no retry storm', async () => {
    const denied = await withoutGrant('reconcile-pool', 'virtualmachinepools/finalizers', 'update');
    const { lines, ping } = deniedReconcile(denied);
    const pool = { apiVersion: API_VERSION, ...runnersPool(ns, 'refused') };
    pool.spec.replicas = 2;
    await cluster().applyManifest([pool]);

    // 202: the event was handled; a 503 would make the broker redeliver a refusal forever.
    expect(await ping()).toBe(202);
    const p = await read('virtualmachinepools', ns, 'refused');
    expect(synced(p)).toMatchObject({ status: 'False', reason: FORBIDDEN });
    expect(synced(p).message).toContain('cannot set blockOwnerDeletion');
    expect(synced(p).message).toContain('knative/base/rbac.yaml');
    expect(await vmsOf('refused')).toHaveLength(0);
    expect(errorsAbout(lines, 'knative/base/rbac.yaml').length).toBeGreaterThan(0);
    const events = JSON.parse(
      await cluster().kubectl(['get', 'events.events.k8s.io', '-n', ns, '-o', 'json']),
    ) as { items: Array<{ reason: string; type: string; regarding: { name: string } }> };
    expect(
      events.items.filter((e) => e.reason === FORBIDDEN && e.regarding.name === 'refused'),
    ).toMatchObject([{ type: 'Warning' }]);
    // One pass per event (its disk creates, then one VM create: the slow start stops at the first
    // refusal), not six passes and a 503 for the broker to redeliver.
    const refusedCreates = denied.kube.counts()['create:forbidden'] ?? 0;
    expect(refusedCreates).toBeGreaterThan(0);
    expect(refusedCreates).toBeLessThanOrEqual(3);

    // Another event: refused again, the pool unchanged (no status churn feeding more events).
    const rv = p?.metadata.resourceVersion;
    expect(await ping()).toBe(202);
    expect((await read('virtualmachinepools', ns, 'refused'))?.metadata.resourceVersion).toBe(rv);
    expect(denied.kube.counts()['create:forbidden']).toBe(2 * refusedCreates);

    await denied.restore();
    await eventually(
      'the pool to recover once the grant is back',
      async () => {
        await ping();
        const now = await read('virtualmachinepools', ns, 'refused');
        return (await vmsOf('refused')).length === 2 && synced(now).status === 'True'
          ? true
          : undefined;
      },
      30_000,
    );
  });

  it('reconcile-pool without update on claims/status: the claim stays unbound, Synced=False names the grant; bound once it is back', async () => {
    const denied = await withoutGrant(
      'reconcile-pool',
      'virtualmachineclaims/status',
      'update',
      'reconcile-pool-no-claim-status',
    );
    const { lines, ping } = deniedReconcile(denied);
    const pool = { apiVersion: API_VERSION, ...runnersPool(ns, 'claimed') };
    pool.spec.replicas = 1;
    await cluster().applyManifest([pool]);
    expect(await ping()).toBe(202);
    const [vm] = await eventually('the member', async () => {
      const all = await vmsOf('claimed');
      return all.length === 1 ? all : undefined;
    });
    // No simulator here: the member is made Running by hand, so it is idle.
    await cluster().kubectl([
      'patch',
      'virtualmachine',
      String(vm?.metadata.name),
      '-n',
      ns,
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"phase":"Running"}}',
    ]);
    await cluster().applyManifest([
      {
        apiVersion: CLAIM_API_VERSION,
        kind: 'VirtualMachineClaim',
        metadata: { name: 'job-1', namespace: ns },
        spec: { poolName: 'claimed' },
      },
    ]);
    const phase = async () => {
      const out = await cluster().kubectl(['get', 'vmclaim', 'job-1', '-n', ns, '-o', 'json']);
      return (JSON.parse(out) as { status?: { phase?: string } }).status?.phase;
    };
    expect(await ping()).toBe(202);
    expect(await ping()).toBe(202);
    expect(await phase()).toBeUndefined();
    const p = await read('virtualmachinepools', ns, 'claimed');
    expect(synced(p)).toMatchObject({ status: 'False', reason: FORBIDDEN });
    expect(synced(p).message).toContain('virtualmachineclaims/status');
    expect(synced(p).message).toContain('knative/base/rbac.yaml');
    expect(errorsAbout(lines, 'knative/base/rbac.yaml').length).toBeGreaterThan(0);

    await denied.restore();
    await eventually(
      'the claim bound once the grant is back',
      async () => {
        await ping();
        return (await phase()) === 'Bound' ? true : undefined;
      },
      30_000,
    );
  });

  it('disk-gc-tick without delete on virtualdisks: a log line, the tick answered, the disk kept', async () => {
    const denied = await withoutGrant('disk-gc-tick', 'virtualdisks', 'delete');
    const lines: string[] = [];
    const app = buildGcApp({ kube: denied.kube, log: testLog('disk-gc-tick', 'trace', lines) });
    const tick = async () => (await app.request('/', pingInit({}))).status;
    const pool = {
      apiVersion: API_VERSION,
      kind: 'VirtualMachinePool',
      metadata: { name: 'gc', namespace: ns },
      spec: {
        replicas: 0,
        scaleDownPolicy: 'NewestFirst',
        virtualMachineTemplate: { spec: { blockDeviceRefs: [{ kind: 'VirtualDisk', name: 'c' }] } },
        virtualDiskTemplates: [
          {
            name: 'c',
            reclaim: { onScaleDown: 'Retain', keep: 0, ttl: '1m' },
            spec: { persistentVolumeClaim: { size: '1Gi' } },
          },
        ],
      },
    };
    await cluster().applyManifest([pool]);
    const stored = await read('virtualmachinepools', ns, 'gc');
    const uid = String(stored?.metadata.uid);
    await cluster().applyManifest([
      {
        apiVersion: API_VERSION,
        kind: 'VirtualDisk',
        metadata: {
          name: 'gc-c-bbbbbb',
          namespace: ns,
          labels: { [keys.poolUid]: uid, [keys.pool]: 'gc', [keys.diskTemplate]: 'c' },
          annotations: {
            [keys.freeSince]: new Date(Date.now() - 3_600_000)
              .toISOString()
              .replace(/\.\d{3}Z$/, 'Z'),
          },
          ownerReferences: [
            {
              apiVersion: API_VERSION,
              kind: 'VirtualMachinePool',
              name: 'gc',
              uid,
              controller: true,
            },
          ],
        },
        spec: { persistentVolumeClaim: { size: '1Gi' } },
      },
    ]);

    expect(await tick()).toBe(202);
    expect(errorsAbout(lines, 'knative/base/rbac.yaml')[0]).toMatch(
      /"forbidden: The API server refused a write of disk-gc-tick: .*cannot delete resource \\"virtualdisks\\"/,
    );
    expect(await read('virtualdisks', ns, 'gc-c-bbbbbb')).toBeDefined();

    await denied.restore();
    await eventually(
      'the free disk to be collected once the grant is back',
      async () => {
        await tick();
        return (await read('virtualdisks', ns, 'gc-c-bbbbbb')) === undefined ? true : undefined;
      },
      30_000,
    );
  });

  describe('behind the kube-apiserver', () => {
    let facing: ApiserverFacing | undefined;
    const lines: string[] = [];
    let validate: Denied;
    let scaleDown: Denied;
    beforeAll(async () => {
      validate = await withoutGrant('scale-validate', 'virtualmachines', 'create');
      scaleDown = await withoutGrant('scale-down-with', 'virtualmachinepools', 'update');
      facing = await startApiserverFacing(ns, {
        validateKube: validate.kube,
        scaleDownKube: scaleDown.kube,
        // scale-down-with acts as its stand-in account here: the one the webhook takes targets from.
        recorder: `system:serviceaccount:${FUNCTIONS_NAMESPACE}:scale-down-with-denied`,
        log: (name) => testLog(name, 'trace', lines),
      });
    });
    afterAll(async () => {
      await facing?.stop();
    });

    it('scale-validate without create on virtualmachines: the pool is refused naming the missing grant', async () => {
      const pool = { apiVersion: API_VERSION, ...runnersPool(ns, 'validated') };
      const refused = await cluster()
        .applyManifest([pool])
        .then(
          () => '',
          (err: unknown) => String(err),
        );
      expect(refused).toContain('denied the request');
      expect(refused).toContain('scale-validate ServiceAccount');
      expect(errorsAbout(lines, 'knative/base/rbac.yaml').length).toBeGreaterThan(0);

      await validate.restore();
      await eventually('the pool to be admitted once the grant is back', async () => {
        await cluster().applyManifest([pool]);
        return true;
      });
    });

    it('scale-down-with without update on virtualmachinepools: 500 naming the grant, nothing removed', async () => {
      const { kubectl } = cluster();
      // Members made by an allowed reconcile-pool (its own ServiceAccount).
      const reconcile = buildReconcileApp({
        kube: createKube(await serviceAccountKubeConfig(cluster().info, 'reconcile-pool')),
        log: testLog('reconcile-pool'),
      });
      await eventually('validated to have 3 members', async () => {
        await reconcile.request('/', pingInit({ namespace: ns }));
        return (await vmsOf('validated')).length === 3 ? true : undefined;
      });
      const target = String((await vmsOf('validated'))[0]?.metadata.name);
      const call = () =>
        kubectl(
          ['create', '--raw', scaleDownWithPath(ns, 'validated'), '-f', '-'],
          JSON.stringify({ targets: [target] }),
        ).then(
          (out) => out,
          (err: unknown) => String(err),
        );
      const refused = await call();
      expect(refused).toContain('InternalError');
      expect(refused).toContain('scale-down-with ServiceAccount');
      const p = await read('virtualmachinepools', ns, 'validated');
      expect((p?.spec as { replicas: number }).replicas).toBe(3);
      const annotations = (p?.metadata.annotations ?? {}) as Record<string, string>;
      expect(annotations[keys.scaleDownTargets]).toBeUndefined();
      expect(errorsAbout(lines, 'scale-down-with ServiceAccount').length).toBeGreaterThan(0);

      await scaleDown.restore();
      await eventually('scaledownwith to work once the grant is back', async () => {
        const out = await call();
        return out.includes('"status":"Success"') ? true : undefined;
      });
      const after = await read('virtualmachinepools', ns, 'validated');
      expect((after?.spec as { replicas: number }).replicas).toBe(2);
    });
  });
});
