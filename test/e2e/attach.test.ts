/**
 * Attach mode through the user's own path: the real `npm start -- --kubeconfig F --simulate-platform
 * --no-sample` as a child process, against a plane of its own started with the platform's real CRDs
 * (VirtualMachine, VirtualDisk, images; no pool CRD: vmpool installs its own). It must install its
 * CRD byte-faithfully, leave the platform's CRDs alone, run every pool of the user guide applied with
 * kubectl, and, where another backend already serves the reference's scaledownwith group, leave that
 * registration untouched and serve scaledownwith under its own group.
 */
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  API_VERSION,
  OWN_SUBRESOURCES_GROUP,
  SUBRESOURCES_GROUP,
  keys,
  poolCrd,
  scaleDownWithPath,
} from '../../shared/api/index.js';
import { startControlPlane } from '../../local/controlplane/cluster.js';
import type { ControlPlane } from '../../local/controlplane/cluster.js';
import { platformCrds } from '../../local/controlplane/crds.js';
import { guidePools } from '../../local/guide.js';
import { SAMPLE_NAMESPACE, sample } from '../../local/sample.js';
import { schemaMismatch } from '../../local/schema-check.js';
import { eventually } from './harness.js';
import { inject } from 'vitest';
import type { NpmStart } from './npm-start.js';
import {
  noLeftovers,
  npmStart,
  platformCrdDirForAttach,
  stoppedCleanly,
  vmpoolKubeconfig,
} from './npm-start.js';

type Obj = Record<string, unknown> & {
  metadata: { name: string; resourceVersion: string; labels?: Record<string, string> } & Record<
    string,
    unknown
  >;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

const crdDir = platformCrdDirForAttach();
let plane: ControlPlane;
let kubeconfig = '';
let running: NpmStart | undefined;
const NS = 'guide';

const kubectl = (args: string[], input?: string) => plane.kubectl(args, input);
const getJson = async (args: string[]): Promise<Obj> =>
  JSON.parse(await kubectl(['get', ...args, '-o', 'json'])) as Obj;
const exists = (args: string[]) =>
  kubectl(['get', ...args, '-o', 'name']).then(
    () => true,
    () => false,
  );

beforeAll(async () => {
  const t0 = Date.now();
  plane = await startControlPlane({
    binDir: inject('cluster').binDir,
    crds: platformCrds({ VMPOOL_DVP_CRDS: crdDir }),
  });
  console.error(`[attach] own plane with the CRDs of ${crdDir} up in ${Date.now() - t0} ms`);
  kubeconfig = vmpoolKubeconfig(plane.kubeconfigPath, plane.dir);
});
afterAll(async () => {
  await running?.stop().catch(() => undefined);
  await plane.stop();
});

/** Starts vmpool as a user would and waits for its "vmpool is running" banner. */
async function start(...extra: string[]): Promise<NpmStart> {
  const t0 = Date.now();
  running = npmStart(['--kubeconfig', kubeconfig, '--simulate-platform', '--no-sample', ...extra]);
  await running.waitFor(/vmpool is running\./);
  console.error(`[attach] npm start ready in ${Date.now() - t0} ms`);
  return running;
}

/** Ctrl-C: exit 0, and no process of the run left behind. */
async function stop(): Promise<void> {
  const r = running;
  running = undefined;
  const t0 = Date.now();
  if (r === undefined) throw new Error('npm start is not running');
  expect(stoppedCleanly(r, await r.stop())).toBe(true);
  expect(await noLeftovers(kubeconfig)).toEqual([]);
  console.error(`[attach] npm start stopped cleanly in ${Date.now() - t0} ms`);
}

/** Every pool of the namespace has as many Running members as it asks for, and is Synced. */
async function converged(): Promise<string[] | undefined> {
  const list = JSON.parse(await kubectl(['get', 'vmpool', '-n', NS, '-o', 'json'])) as {
    items: Obj[];
  };
  const ok = list.items.every((p) => {
    const s = (p.status ?? {}) as {
      replicas?: number;
      readyReplicas?: number;
      observedGeneration?: number;
      conditions?: Array<{ type: string; status: string }>;
    };
    const want = (p.spec as { replicas: number }).replicas;
    return (
      s.observedGeneration === (p.metadata as { generation?: number }).generation &&
      (s.replicas ?? 0) === want &&
      (s.readyReplicas ?? 0) === want &&
      s.conditions?.find((c) => c.type === 'Synced')?.status === 'True'
    );
  });
  return ok && list.items.length > 0 ? list.items.map((p) => p.metadata.name) : undefined;
}

describe('npm start attached to a cluster with the platform’s CRDs', () => {
  it('installs its CRD byte-faithfully, leaves the platform’s CRDs alone, and the user guide’s pools converge', async () => {
    const platform = platformCrds({ VMPOOL_DVP_CRDS: crdDir }).map((c) => c.metadata.name);
    const before = new Map(
      await Promise.all(
        platform.map(
          async (n) => [n, (await getJson(['crd', n])).metadata.resourceVersion] as const,
        ),
      ),
    );
    const vmpool = await start();

    const served = await getJson([
      'crd',
      'virtualmachinepools.virtualization.deckhouse.io',
      '--show-managed-fields',
    ]);
    expect(schemaMismatch(poolCrd(), served)).toBeUndefined();
    expect(served.metadata.labels?.['app.kubernetes.io/part-of']).toBe('vmpool');
    expect(JSON.stringify(served.metadata.managedFields)).toContain('"manager":"vmpool"');
    for (const n of platform) {
      expect((await getJson(['crd', n])).metadata.resourceVersion).toBe(before.get(n));
      expect(vmpool.lines.some((l) => l.includes(`CustomResourceDefinition/${n} exists`))).toBe(
        true,
      );
    }
    expect(vmpool.lines.join('\n')).toContain(
      `scaledownwith path: POST ${scaleDownWithPath(SUBRESOURCES_GROUP, '<namespace>', '<pool>')}`,
    );

    // The user guide's pools, as a user applies them: plain kubectl apply of the YAML. The admission
    // webhook dry-runs each template against the platform's VirtualMachine CRD on the way in.
    await kubectl(['create', 'namespace', NS]);
    const pools = guidePools(NS).map((p) => ({
      apiVersion: API_VERSION,
      ...p,
    }));
    await kubectl(['apply', '-f', '-'], pools.map((p) => stringify(p)).join('---\n'));
    const t0 = Date.now();
    expect(await eventually('every guide pool to converge', converged, 120_000)).toEqual([
      'cdrom',
      'reclaim',
      'runners',
    ]);
    console.error(`[attach] the guide's pools converged in ${Date.now() - t0} ms`);

    await stop();
    // What it registered is gone; what it installed for good (the CRD) stays.
    expect(await exists(['apiservice', `v1alpha2.${SUBRESOURCES_GROUP}`])).toBe(false);
    expect(await exists(['validatingwebhookconfiguration', 'vmpool-local'])).toBe(false);
    expect(await exists(['crd', 'virtualmachinepools.virtualization.deckhouse.io'])).toBe(true);
  });

  it('a run killed with SIGKILL leaves its webhook and APIService registered; --uninstall removes them and nothing else, and the next start finds them too', async () => {
    const inventory = async (): Promise<string> =>
      kubectl(['get', 'vmpool,vm,vd', '-n', SAMPLE_NAMESPACE, '-o', 'name']);
    /** Starts, runs `meanwhile`, then SIGKILLs node: nothing of the run can undo its registrations. */
    const killed = async (meanwhile: () => Promise<void> = () => Promise.resolve()) => {
      const run = await start();
      const group = /scaledownwith path: POST \/apis\/([^/]+)\//.exec(run.lines.join('\n'))?.[1];
      if (group === undefined) throw new Error('no scaledownwith path in the output');
      const node = run.family().node;
      if (node === undefined) throw new Error("npm start's node process not found");
      await meanwhile();
      process.kill(node, 'SIGKILL');
      await run.exited;
      running = undefined;
      expect(await noLeftovers(kubeconfig)).toEqual([]);
      return `v1alpha2.${group}`;
    };
    // A pool with its VMs and disks, which nothing below may touch.
    const apiService = await killed(async () => {
      await plane.applyManifest(sample());
      await eventually(
        'the sample pool to converge',
        async () =>
          (await inventory()).split('\n').filter((l) => l.startsWith('virtualmachine.')).length ===
          3
            ? true
            : undefined,
        60_000,
      );
    });
    const before = await inventory();
    expect(await exists(['validatingwebhookconfiguration', 'vmpool-local'])).toBe(true);
    expect(await exists(['apiservice', apiService])).toBe(true);

    const t0 = Date.now();
    const uninstall = npmStart(['--kubeconfig', kubeconfig, '--uninstall']);
    expect(await uninstall.exited).toBe(0);
    const said = uninstall.lines.join('\n');
    console.error(`[attach] --uninstall in ${String(Date.now() - t0)} ms`);
    expect(said).toContain('removed ValidatingWebhookConfiguration/vmpool-local');
    expect(said).toContain(`removed APIService/${apiService}`);
    expect(await exists(['validatingwebhookconfiguration', 'vmpool-local'])).toBe(false);
    expect(await exists(['apiservice', apiService])).toBe(false);
    expect(await inventory()).toBe(before);
    // Nothing of vmpool's left to remove: said so, and still success.
    const again = npmStart(['--kubeconfig', kubeconfig, '--uninstall']);
    expect(await again.exited).toBe(0);
    expect(again.lines.join('\n')).toContain('no registration of vmpool found');

    await killed();
    const next = await start();
    expect(next.lines.join('\n')).toContain(
      'left by an earlier run: removed ValidatingWebhookConfiguration/vmpool-local',
    );
    await stop();
    expect(await exists(['validatingwebhookconfiguration', 'vmpool-local'])).toBe(false);
    expect(await exists(['apiservice', apiService])).toBe(false);
  });

  it('simulates the platform at the pace its flags set: a warm standby on the platform’s VM CRD, promoted in a boot, not a provisioning', async () => {
    const vmpool = await start(
      '--provisioning-seconds',
      '3',
      '--boot-seconds',
      '1',
      '--never-start-label',
      'sim.vmpool.io/never-start=true',
    );
    const ns = 'warm';
    await kubectl(['create', 'namespace', ns]);
    const pool = (name: string, edit: (spec: Record<string, unknown>) => void) => {
      const p = guidePools(ns).find((x) => x.metadata.name === 'runners')!;
      const spec = { ...p.spec, replicas: 1 } as Record<string, unknown>;
      edit(spec);
      return stringify({ apiVersion: API_VERSION, ...p, metadata: { name, namespace: ns }, spec });
    };
    await kubectl(
      ['apply', '-f', '-'],
      [
        pool('warm', (s) => (s.standby = { replicas: 1, state: 'Stopped' })),
        pool('stuck', (s) => {
          s.virtualMachineTemplate = {
            ...(s.virtualMachineTemplate as object),
            metadata: { labels: { 'sim.vmpool.io/never-start': 'true' } },
          };
        }),
      ].join('---\n'),
    );
    type Vm = Obj & {
      spec: { runPolicy?: string };
      status?: {
        phase?: string;
        stats?: { phasesTransitions?: Array<{ phase: string; timestamp: string }> };
      };
    };
    const vms = async (name: string): Promise<Vm[]> =>
      (
        JSON.parse(
          await kubectl(['get', 'vm', '-n', ns, '-l', `${keys.pool}=${name}`, '-o', 'json']),
        ) as { items: Vm[] }
      ).items;
    const standby = (v: Vm) => v.metadata.labels?.[keys.standby] === 'true';
    const [replica, spare] = await eventually(
      'a Running replica and a Stopped standby member',
      async () => {
        const all = await vms('warm');
        const r = all.find((v) => !standby(v) && v.status?.phase === 'Running');
        const s = all.find((v) => standby(v) && v.status?.phase === 'Stopped');
        return r !== undefined && s !== undefined ? ([r, s] as const) : undefined;
      },
      60_000,
    );
    expect(spare.spec.runPolicy).toBe('AlwaysOff');
    // The phase history the platform's CRD keeps: Pending (disks provisioning) ≥ 3 s, boot ≥ 1 s.
    const at = (v: Vm, phase: string) =>
      Date.parse(
        v.status?.stats?.phasesTransitions?.find((t) => t.phase === phase)?.timestamp ?? '',
      );
    expect(at(replica, 'Starting') - at(replica, 'Pending')).toBeGreaterThanOrEqual(2000);
    expect(at(replica, 'Running') - at(replica, 'Starting')).toBeGreaterThanOrEqual(1000);
    // A scale-up promotes the stopped standby member: Running after a boot, not a provisioning.
    const t0 = Date.now();
    await kubectl(['scale', 'vmpool/warm', '-n', ns, '--replicas=2']);
    await eventually(
      'the standby member promoted and Running',
      async () => {
        const v = (await vms('warm')).find((x) => x.metadata.name === spare.metadata.name);
        return v !== undefined && !standby(v) && v.status?.phase === 'Running' ? true : undefined;
      },
      60_000,
    );
    console.error(`[attach] standby member promoted and Running in ${Date.now() - t0} ms`);
    // A VM of the never-start label stays Starting.
    const stuck = await eventually('the stuck member Starting', async () => {
      const v = (await vms('stuck'))[0];
      return v?.status?.phase === 'Starting' ? v : undefined;
    });
    await new Promise((r) => setTimeout(r, 3000));
    expect((await vms('stuck')).map((v) => v.status?.phase)).toEqual(['Starting']);
    expect(stuck.metadata.name).toBeTruthy();
    expect(vmpool.lines.length).toBeGreaterThan(0);
    await stop();
  });

  describe('where another backend serves the default scaledownwith group', () => {
    let standIn: Server | undefined;
    beforeAll(async () => {
      // Whatever the test before left running (when it failed) would hold the group.
      await running?.stop();
      const cert = plane.mintServingCert('stand-in', 'stand-in');
      const groupVersion = `${SUBRESOURCES_GROUP}/v1alpha2`;
      const resources = {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion,
        resources: [
          {
            name: 'virtualmachines/console',
            singularName: '',
            namespaced: true,
            kind: 'VirtualMachineConsole',
            verbs: ['get'],
          },
        ],
      };
      const group = {
        kind: 'APIGroup',
        apiVersion: 'v1',
        name: SUBRESOURCES_GROUP,
        versions: [{ groupVersion, version: 'v1alpha2' }],
        preferredVersion: { groupVersion, version: 'v1alpha2' },
      };
      const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
        const body =
          req.url === '/apis'
            ? { kind: 'APIGroupList', apiVersion: 'v1', groups: [group] }
            : req.url === `/apis/${SUBRESOURCES_GROUP}`
              ? group
              : req.url?.startsWith(`/apis/${groupVersion}`) === true
                ? resources
                : undefined;
        res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body ?? { kind: 'Status', code: 404 }));
      });
      standIn = server;
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      await kubectl(['create', 'namespace', 'stand-in']);
      await kubectl(
        ['apply', '--server-side', '-f', '-'],
        [
          {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'virtualization-api', namespace: 'stand-in' },
            spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ port }] },
          },
          {
            apiVersion: 'apiregistration.k8s.io/v1',
            kind: 'APIService',
            metadata: {
              name: `v1alpha2.${SUBRESOURCES_GROUP}`,
              labels: { heritage: 'deckhouse', module: 'virtualization' },
            },
            spec: {
              group: SUBRESOURCES_GROUP,
              version: 'v1alpha2',
              groupPriorityMinimum: 1000,
              versionPriority: 15,
              insecureSkipTLSVerify: true,
              service: { name: 'virtualization-api', namespace: 'stand-in', port },
            },
          },
        ]
          .map((o) => stringify(o))
          .join('---\n'),
      );
      await kubectl([
        'wait',
        '--for=condition=Available',
        '--timeout=60s',
        `apiservice/v1alpha2.${SUBRESOURCES_GROUP}`,
      ]);
    });
    afterAll(async () => {
      await kubectl(['delete', 'apiservice', `v1alpha2.${SUBRESOURCES_GROUP}`]).catch(
        () => undefined,
      );
      const server = standIn;
      if (server !== undefined)
        await new Promise<void>((r) => {
          server.close(() => {
            r();
          });
        });
    });

    it('leaves the stand-in registration untouched and serves scaledownwith under vmpool’s own group', async () => {
      const before = await getJson(['apiservice', `v1alpha2.${SUBRESOURCES_GROUP}`]);
      const vmpool = await start();
      const own = scaleDownWithPath(OWN_SUBRESOURCES_GROUP, '<namespace>', '<pool>');
      expect(vmpool.lines.join('\n')).toContain(`scaledownwith path: POST ${own}`);
      expect(vmpool.lines.join('\n')).toContain(
        `is served by Service stand-in/virtualization-api (labels heritage=deckhouse, module=virtualization; written by kubectl (Apply)`,
      );
      await kubectl([
        'wait',
        '--for=condition=Available',
        '--timeout=60s',
        `apiservice/v1alpha2.${OWN_SUBRESOURCES_GROUP}`,
      ]);

      // scaledownwith under vmpool's own group, on the runners pool of the first test.
      await eventually('runners converged again', converged, 60_000);
      const members = JSON.parse(
        await kubectl(['get', 'vm', '-n', NS, '-l', `${keys.pool}=runners`, '-o', 'json']),
      ) as { items: Obj[] };
      const target = members.items[0]?.metadata.name ?? '';
      const answer = await kubectl(
        ['create', '--raw', scaleDownWithPath(OWN_SUBRESOURCES_GROUP, NS, 'runners'), '-f', '-'],
        JSON.stringify({ targets: [target] }),
      );
      expect(JSON.parse(answer)).toMatchObject({ status: 'Success', code: 201 });
      expect((await getJson(['vmpool', 'runners', '-n', NS])).spec?.replicas).toBe(2);
      await eventually(
        'the target to leave',
        async () => ((await exists(['vm', target, '-n', NS])) ? undefined : true),
        60_000,
      );

      await stop();
      const after = await getJson(['apiservice', `v1alpha2.${SUBRESOURCES_GROUP}`]);
      expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
      expect(after.spec).toEqual(before.spec);
      expect(after.metadata.labels).toEqual(before.metadata.labels);
      // The stand-in still answers for its group.
      expect(await kubectl(['get', '--raw', `/apis/${SUBRESOURCES_GROUP}/v1alpha2`])).toContain(
        'virtualmachines/console',
      );
      expect(await exists(['apiservice', `v1alpha2.${OWN_SUBRESOURCES_GROUP}`])).toBe(false);
    });

    it('with --take-over of that group it replaces the stand-in’s APIService, and Ctrl-C puts it back as it was', async () => {
      const name = `v1alpha2.${SUBRESOURCES_GROUP}`;
      const before = await getJson(['apiservice', name]);
      const vmpool = await start('--take-over', '--scaledownwith-group', SUBRESOURCES_GROUP);
      expect(vmpool.lines.join('\n')).toContain(
        `APIService/${name}: taken over; what was there is put back on Ctrl-C`,
      );
      const taken = await getJson(['apiservice', name]);
      expect(taken.metadata.labels).toMatchObject({ 'app.kubernetes.io/part-of': 'vmpool' });
      expect(taken.spec).not.toEqual(before.spec);

      await stop();
      const after = await getJson(['apiservice', name]);
      expect(after.metadata.uid).toBe(before.metadata.uid);
      expect(after.spec).toEqual(before.spec);
      expect(after.metadata.labels).toEqual(before.metadata.labels);
      await eventually(
        'the stand-in to answer for its group again',
        async () =>
          (
            await kubectl(['get', '--raw', `/apis/${SUBRESOURCES_GROUP}/v1alpha2`]).catch(() => '')
          ).includes('virtualmachines/console')
            ? true
            : undefined,
        60_000,
      );
    });
  });
});
