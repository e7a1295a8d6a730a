/**
 * Where the virtualization platform's own VirtualMachinePool CRD is installed (docs/operations.md,
 * "Attach mode",
 * decision: refuse by default, take over only when told). On a plane of its own with that CRD (from
 * the shared fixtures, `x-doc-*` keys stripped as the platform does) and the platform's other CRDs:
 * - reconcile-pool (as its own ServiceAccount) fails closed: the CRD prunes `status.intent`, so the
 *   pool gets `Synced=False IntentNotPersisted`, one Warning Event, and no VM is created;
 * - `npm start` refuses to replace that CRD, says whose it is and what to do, and changes nothing;
 * - `npm start --take-over` (the documented step once the platform's pool controller is disabled)
 *   installs vmpool's CRD, and the same pool converges.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import { API_VERSION, poolCrd } from '../../shared/api/index.js';
import { INTENT_NOT_PERSISTED } from '../../shared/domain/index.js';
import { createKube } from '../../shared/kube/index.js';
import { startControlPlane } from '../../local/controlplane/cluster.js';
import type { ControlPlane } from '../../local/controlplane/cluster.js';
import type { KubeObject } from '../../local/controlplane/crds.js';
import { parseManifests, platformCrds, stripDocKeys } from '../../local/controlplane/crds.js';
import { pingInit } from '../../local/events.js';
import { runnersPool } from '../../local/guide.js';
import { schemaMismatch } from '../../local/schema-check.js';
import { testLog } from '../logs.js';
import { eventually } from './harness.js';
import {
  noLeftovers,
  npmStart,
  realPlatformCrdDir,
  stoppedCleanly,
  vmpoolKubeconfig,
} from './npm-start.js';
import { installFunctionRbac, serviceAccountKubeConfig } from './rbac.js';

const CRD = 'virtualmachinepools.virtualization.deckhouse.io';
const NS = 'platform';

type Obj = Record<string, unknown> & {
  metadata: Record<string, unknown> & { resourceVersion: string; name: string };
  status?: { conditions?: Array<Record<string, string>>; readyReplicas?: number } & Record<
    string,
    unknown
  >;
};

/** The platform's real CRDs: a missing fixture fails the run, it is never skipped. */
function platformDir(): string {
  const dir = realPlatformCrdDir();
  if (dir === undefined)
    throw new Error(
      'the platform’s pool CRD is needed: set VMPOOL_DVP_CRDS or put ../shared/fixtures/dvp-crds beside the repository',
    );
  return dir;
}

let plane: ControlPlane;
let kubeconfig = '';
const kubectl = (args: string[], input?: string) => plane.kubectl(args, input);
const getJson = async (args: string[]): Promise<Obj> =>
  JSON.parse(await kubectl(['get', ...args, '-o', 'json'])) as Obj;
const synced = (p: Obj) => p.status?.conditions?.find((c) => c.type === 'Synced') ?? {};
const vmCount = async () =>
  (
    JSON.parse(await kubectl(['get', 'vm', '-n', NS, '-o', 'json'])) as {
      items: unknown[];
    }
  ).items.length;

beforeAll(async () => {
  const dir = platformDir();
  const platformPool: KubeObject[] = parseManifests(
    readFileSync(join(dir, 'virtualmachinepools.yaml'), 'utf8'),
  ).map(stripDocKeys);
  const t0 = Date.now();
  plane = await startControlPlane({
    binDir: inject('cluster').binDir,
    crds: [...platformPool, ...platformCrds({ VMPOOL_DVP_CRDS: dir })],
  });
  await installFunctionRbac(plane);
  console.error(
    `[platform-pool] own plane with the platform's pool CRD up in ${Date.now() - t0} ms`,
  );
  kubeconfig = vmpoolKubeconfig(plane.kubeconfigPath, plane.dir);
  await kubectl(['create', 'namespace', NS]);
  // The platform's CRD requires liveMigrationPolicy in the template (vmpool's does not).
  const pool = { apiVersion: API_VERSION, ...runnersPool(NS) };
  const template = pool.spec.virtualMachineTemplate.spec as Record<string, unknown>;
  template.liveMigrationPolicy = 'PreferSafe';
  await kubectl(['apply', '-f', '-'], stringify(pool));
});
afterAll(async () => {
  await plane.stop();
});

describe('on the platform’s own VirtualMachinePool CRD', () => {
  it('reconcile-pool fails closed: Synced=False IntentNotPersisted, one Warning Event, nothing created', async () => {
    const lines: string[] = [];
    const app = buildReconcileApp({
      kube: createKube(await serviceAccountKubeConfig(plane, 'reconcile-pool')),
      log: testLog('reconcile-pool', 'trace', lines),
    });
    const ping = async () => (await app.request('/', pingInit({ namespace: NS }))).status;

    expect(await ping()).toBe(202);
    const pool = await getJson(['vmpool', 'runners', '-n', NS]);
    expect(synced(pool)).toMatchObject({ status: 'False', reason: INTENT_NOT_PERSISTED });
    expect(synced(pool).message).toContain('prunes it');
    expect(synced(pool).message).toContain('--take-over');
    expect(pool.status?.intent).toBeUndefined();
    expect(await vmCount()).toBe(0);
    expect(
      lines.some(
        (l) =>
          (JSON.parse(l) as { level: number }).level >= 50 && l.includes('intent not persisted'),
      ),
    ).toBe(true);
    const events = async () =>
      (
        JSON.parse(await kubectl(['get', 'events.events.k8s.io', '-n', NS, '-o', 'json'])) as {
          items: Array<{ reason: string; type: string; note: string }>;
        }
      ).items.filter((e) => e.reason === INTENT_NOT_PERSISTED);
    expect(await events()).toMatchObject([{ type: 'Warning' }]);

    // Settled: more events change nothing (no status churn, so no event loop), create nothing.
    for (let i = 0; i < 3; i++) expect(await ping()).toBe(202);
    expect((await getJson(['vmpool', 'runners', '-n', NS])).metadata.resourceVersion).toBe(
      pool.metadata.resourceVersion,
    );
    expect(await events()).toHaveLength(1);
    expect(await vmCount()).toBe(0);
  });

  it('npm start refuses to replace it, says whose it is and what to do, and changes nothing', async () => {
    const before = await getJson(['crd', CRD]);
    const run = npmStart(['--kubeconfig', kubeconfig, '--simulate-platform', '--no-sample']);
    expect(await run.exited).toBe(1);
    const out = run.lines.join('\n');
    expect(out).toContain(
      `CustomResourceDefinition/${CRD} exists and is not vmpool's (labels heritage=deckhouse, module=virtualization; written by kubectl (Apply)`,
    );
    expect(out).toContain('--take-over');
    expect((await getJson(['crd', CRD])).metadata.resourceVersion).toBe(
      before.metadata.resourceVersion,
    );
    expect(await noLeftovers(kubeconfig)).toEqual([]);
    await expect(
      kubectl(['get', 'validatingwebhookconfiguration', 'vmpool-local']),
    ).rejects.toThrow(/NotFound/);
  });

  it('with --take-over it installs its own CRD, and the same pool converges', async () => {
    const run = npmStart([
      '--kubeconfig',
      kubeconfig,
      '--simulate-platform',
      '--no-sample',
      '--take-over',
    ]);
    try {
      await run.waitFor(/vmpool is running\./);
      expect(run.lines.join('\n')).toContain(`CustomResourceDefinition/${CRD}: tookOver`);
      const served = await getJson(['crd', CRD]);
      expect(schemaMismatch(poolCrd(), served)).toBeUndefined();
      const t0 = Date.now();
      await eventually(
        'runners to converge under vmpool',
        async () => {
          const p = await getJson(['vmpool', 'runners', '-n', NS]);
          return p.status?.readyReplicas === 3 &&
            synced(p).status === 'True' &&
            (await vmCount()) === 3
            ? true
            : undefined;
        },
        120_000,
      );
      console.error(`[platform-pool] taken over and converged in ${Date.now() - t0} ms`);
    } finally {
      expect(stoppedCleanly(run, await run.stop())).toBe(true);
    }
    expect(await noLeftovers(kubeconfig)).toEqual([]);
  });
});
