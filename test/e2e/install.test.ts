/**
 * knative/ installed as a cluster admin installs it, on a control plane of its own (a fresh cluster:
 * the platform's VM and disk CRDs, the Knative and cert-manager CRDs, no pool CRD). The commands are
 * knative/README.md's own blocks, run with bash and the real kubectl from an admin's copy of knative/.
 *
 * This plane runs no Knative controllers, no Deployment controller and no kubelet, so `verify.sh`
 * first has real problems to report, and the test checks that it reports them in plain words. Then
 * the test stands in for what is missing, and nothing else:
 * - the Knative system Deployments and the Ready conditions Knative's controllers would set;
 * - the Deployment controller and kubelet: the four functions run as processes, started as the image
 *   starts them (scripts/image-start.ts: from their snapshots, `npm run build -- --snapshot`), with the env of the installed workloads and the certificate of the installed
 *   Secret, and the two Deployments' status says so;
 * - the network: the two HTTPS Services become ExternalName `localhost`, and the webhook and the
 *   APIService dial the processes' ports (control-plane.md §3);
 * - the ApiServerSource's adapter: the real receive adapter, configured from the installed source as
 *   the Eventing controller renders it, delivers to reconcile-pool;
 * - the VM platform: the simulator.
 * Then `verify.sh` must pass, the sample pool must converge, and the documented Uninstall and CRD
 * removal must keep every pool, VM and disk they promise to keep.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import { FUNCTIONS, buildBundles, type FunctionName } from '../../scripts/build.js';
import { imageStart } from '../../scripts/image-start.js';
import { buildSnapshot } from '../../scripts/snapshot.js';
import {
  adapterConfigOf,
  startAdapter,
  type Adapter,
  type ApiServerSourceSpec,
} from '../../local/controlplane/adapter.js';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import type { SubscriptionsFilter } from '../../local/controlplane/trigger.js';
import { startControlPlane, type ControlPlane } from '../../local/controlplane/cluster.js';
import { parseManifests, stripDocKeys, testCrds } from '../../local/controlplane/crds.js';
import { runKubectl, toYaml } from '../../local/controlplane/kubectl.js';
import { startSimulator, type Simulator } from '../../local/simulator/simulator.js';
import { adminCheckout, NAMESPACE, readmeBlock } from './knative.js';

const POOL_CRD = 'virtualmachinepools.virtualization.deckhouse.io';
const CLAIM_CRD = 'virtualmachineclaims.vmpool.virtualization.deckhouse.io';
const APISERVICE = 'v1alpha2.subresources.virtualization.deckhouse.io';
const SAMPLE_NS = 'vmpool-verify';

let plane: ControlPlane | undefined;
let co = '';
let adapter: Adapter | undefined;
let sim: Simulator | undefined;
const procs: ChildProcess[] = [];
const transcript: string[] = [];

function cp(): ControlPlane {
  if (plane === undefined) throw new Error('no control plane');
  return plane;
}
const bin = () => inject('cluster').binDir;
const kubectl = (args: string[], input?: string) =>
  runKubectl(join(bin(), 'kubectl'), cp().kubeconfigPath, args, input);

/** Runs a script with bash from the admin's checkout, with the built kubectl first on PATH. */
function sh(script: string, label = script): Promise<{ code: number; out: string }> {
  return new Promise((ok, fail) => {
    // stdin ignored: on a socket, bash takes itself for a remote shell and reads bashrc.
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: co,
      env: {
        PATH: `${bin()}:${process.env.PATH ?? ''}`,
        KUBECONFIG: cp().kubeconfigPath,
        HOME: process.env.HOME ?? co,
      },
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      transcript.push(`$ ${label}\n${out.trimEnd()}\n[exit ${String(code)}]`);
      ok({ code: code ?? -1, out });
    });
  });
}
const readme = (block: string) =>
  sh(readmeBlock(block), `# README block ${block}\n${readmeBlock(block).trimEnd()}`);
const verify = (args = '') => sh(`knative/verify.sh ${args}`.trim());

/** Starts a function as the container does (its snapshot, from dist/); resolves with its port. */
function startImage(name: FunctionName, env: Record<string, string>): Promise<number> {
  const { command, args } = imageStart(name);
  const child = spawn(process.execPath, [...command.slice(1), ...args], {
    cwd: co,
    env: {
      PATH: process.env.PATH,
      KUBECONFIG: cp().kubeconfigPath,
      LOG_LEVEL: 'info',
      ...env,
      PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.push(child);
  return new Promise((ok, fail) => {
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('exit', (code) => {
      fail(new Error(`${name} exited with ${String(code)}: ${stderr}`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const rec = JSON.parse(line) as { msg?: string; port?: number };
        if (rec.msg === `${name} listening` && typeof rec.port === 'number') ok(rec.port);
      } catch {
        // not a log record
      }
    });
  });
}

/** The env of a container of an installed workload, as the kubelet would give it. */
async function installedEnv(resource: string, name: string): Promise<Record<string, string>> {
  const out = await kubectl([
    'get',
    resource,
    name,
    '-n',
    NAMESPACE,
    '-o',
    'jsonpath={range .spec.template.spec.containers[0].env[*]}{.name}={.value}{"\\n"}{end}',
  ]);
  return Object.fromEntries(
    out
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/** The `spec.filters` of an installed Trigger. */
async function installedFilters(name: string): Promise<SubscriptionsFilter[]> {
  const trigger = JSON.parse(
    await kubectl(['get', 'triggers.eventing.knative.dev', name, '-n', NAMESPACE, '-o', 'json']),
  ) as { spec?: { filters?: SubscriptionsFilter[] } };
  return trigger.spec?.filters ?? [];
}

/** Marks a condition True in an object's status, as its controller would. */
async function markTrue(resource: string, name: string, type: string, ns?: string): Promise<void> {
  const status = {
    conditions: [{ type, status: 'True', lastTransitionTime: new Date().toISOString() }],
  };
  await kubectl([
    'patch',
    resource,
    name,
    ...(ns === undefined ? [] : ['-n', ns]),
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
}

/** Deployments whose status says `n` replicas are available (the Deployment controller's work). */
async function availableDeployments(
  ns: string,
  names: string[],
  labels: Record<string, string>,
): Promise<void> {
  await kubectl(['create', 'namespace', ns]).catch(() => undefined);
  for (const name of names) {
    await kubectl(
      ['create', '-f', '-'],
      toYaml([
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name, namespace: ns, labels },
          spec: {
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { containers: [{ name, image: 'registry.k8s.io/pause:3.10' }] },
            },
          },
        },
      ]),
    ).catch(() => undefined);
  }
}

async function markAvailable(ns: string, name: string, n: number): Promise<void> {
  await kubectl([
    'patch',
    'deployment',
    name,
    '-n',
    ns,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({
      status: { replicas: n, readyReplicas: n, availableReplicas: n, updatedReplicas: n },
    }),
  ]);
}

/** Names of objects of a kind, `-o name`, empty when there are none. */
async function names(args: string[]): Promise<string[]> {
  const out = await kubectl(['get', ...args, '-o', 'name', '--ignore-not-found']);
  return out.split('\n').filter((l) => l !== '');
}

/**
 * Deletes a CRD and waits until it is gone, at most `ms`. The wait was once unbounded and a CI run
 * spent the test's whole timeout in it without saying why: a CRD still there after `ms` fails with
 * what holds it (its finalizers and the apiextensions controller's conditions).
 */
async function deleteCrd(name: string, ms = 60_000): Promise<void> {
  await kubectl(['delete', 'crd', name, '--wait=false']);
  const deadline = Date.now() + ms;
  while ((await names(['crd', name])).length > 0) {
    if (Date.now() > deadline) {
      const held = await kubectl([
        'get',
        'crd',
        name,
        '-o',
        'jsonpath={.metadata.finalizers} {.status.conditions}',
      ]);
      throw new Error(`CRD ${name} still there ${ms} ms after its delete: ${held}`);
    }
    await sleep(200);
  }
}

beforeAll(async () => {
  // knative/crd is applied by the README's step 1.
  const crds = testCrds().filter(
    (c) => c.metadata.name !== POOL_CRD && c.metadata.name !== CLAIM_CRD,
  );
  plane = await startControlPlane({ binDir: bin(), crds });
  // Prerequisites that are CRDs: Knative's real ones and the cert-manager stand-ins.
  const knative = join(REPO_ROOT, '..', 'shared', 'fixtures', 'knative-crds');
  const certManager = join(REPO_ROOT, 'test', 'fixtures', 'cert-manager');
  // knative/overlays/oidc ships EventPolicies (Eventing 1.15+), which the shared Knative CRDs lack.
  const eventPolicy = join(REPO_ROOT, 'test', 'fixtures', 'knative-eventpolicy');
  const fromEnv = process.env.VMPOOL_KNATIVE_CRDS;
  const dirs = [
    fromEnv !== undefined && fromEnv !== '' ? fromEnv : knative,
    certManager,
    eventPolicy,
  ];
  for (const dir of dirs) await kubectl(['apply', '--server-side', '-f', dir]);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
  co = await adminCheckout({ certs: false });
  await buildBundles({ outdir: join(co, 'dist'), report: false });
  for (const name of FUNCTIONS) await buildSnapshot(join(co, 'dist'), name);
});

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  await adapter?.stop();
  await sim?.stop();
  await plane?.stop();
  if (co !== '') rmSync(co, { recursive: true, force: true });
  console.log(`[install] transcript:\n${transcript.join('\n\n')}`);
});

describe('knative/README.md, followed as written on a fresh control plane', () => {
  it('step 1 stops with a conflict on a pool CRD another manager owns, and changes nothing', async () => {
    // The virtualization platform's own VirtualMachinePool CRD, created by someone else.
    const fromEnv = process.env.VMPOOL_DVP_CRDS;
    const dvpDir =
      fromEnv !== undefined && fromEnv !== ''
        ? fromEnv
        : join(REPO_ROOT, '..', 'shared', 'fixtures', 'dvp-crds');
    const dvp = join(dvpDir, 'virtualmachinepools.yaml');
    const foreign = parseManifests(readFileSync(dvp, 'utf8')).map(stripDocKeys);
    await kubectl(['create', '-f', '-'], toYaml(foreign));
    // The CRD's own controller writes its status once (Established): read the version after that.
    // kubectl wait fails outright ("conditions accessor error") while the status has no conditions
    // yet, right after the create: poll until it has them.
    for (let i = 0; ; i++) {
      const waited = await kubectl([
        'wait',
        '--for=condition=Established',
        `crd/${POOL_CRD}`,
        '--timeout=30s',
      ]).then(
        () => true,
        (err: unknown) => (i < 50 ? false : Promise.reject(err as Error)),
      );
      if (waited) break;
      await sleep(100);
    }
    const before = await kubectl([
      'get',
      'crd',
      POOL_CRD,
      '-o',
      'jsonpath={.metadata.resourceVersion}',
    ]);
    const step1 = await readme('install-crd');
    expect(step1.code).not.toBe(0);
    expect(step1.out).toMatch(/Apply failed with \d+ conflicts?: conflict with "kubectl-create"/);
    expect(
      await kubectl(['get', 'crd', POOL_CRD, '-o', 'jsonpath={.metadata.resourceVersion}']),
    ).toBe(before);
    const v = await verify('--controller');
    expect(v.code).toBe(1);
    expect(v.out).toContain(`CRD ${POOL_CRD} is not vmpool's (its status has no intent field`);
    expect(v.out).not.toContain("the virtualization platform's own pool controller is running");
    // The platform's pool controller registers its pool webhook only while it runs.
    const platformHook = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'd8-virtualization-standin' },
      webhooks: [
        {
          name: 'vmpool.virtualization-controller.validate.d8-virtualization',
          clientConfig: { url: 'https://127.0.0.1:1/validate' },
          rules: [
            {
              apiGroups: ['virtualization.deckhouse.io'],
              apiVersions: ['v1alpha2'],
              operations: ['CREATE'],
              resources: ['virtualmachinepools'],
            },
          ],
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    };
    await kubectl(['create', '-f', '-'], toYaml([platformHook]));
    const withPlatform = await verify('--controller');
    await kubectl(['delete', 'validatingwebhookconfiguration', platformHook.metadata.name]);
    expect(withPlatform.out).toContain(
      "FAIL  the virtualization platform's own pool controller is running (its webhook vmpool.virtualization-controller.validate.d8-virtualization is registered)",
    );
    await deleteCrd(POOL_CRD);
  });

  it('installs the CRD, the overlay, the certificates and the controller, as written', async () => {
    expect((await readme('install-crd')).code).toBe(0);
    expect((await readme('install-overlay')).code).toBe(0);
    // The admin's edit of their overlay: the plain-TLS path and the digest they noted.
    const mine = join(co, 'knative/overlays/mine/kustomization.yaml');
    const edited = readFileSync(mine, 'utf8')
      .replace('  - ../cert-manager\n', '  - ../plain-tls\n')
      .replace(/sha256:0{64}/, `sha256:${'ab'.repeat(32)}`);
    expect(edited).toContain('../plain-tls');
    writeFileSync(mine, edited);
    expect((await readme('install-plain-tls-certs')).code).toBe(0);
    const controller = await readme('install-controller');
    expect(controller.code).toBe(0);
    expect(controller.out).toContain(
      'validatingwebhookconfiguration.admissionregistration.k8s.io/vmpool-scale-validate serverside-applied',
    );
    expect(controller.out).not.toContain('apiservice');
  });

  it('verify --controller says what a cluster without Knative controllers and nodes lacks', async () => {
    const v = await verify('--controller');
    expect(v.code).toBe(1);
    for (const line of [
      'FAIL  Knative Serving: deployment(s) controller activator autoscaler webhook not found in namespace knative-serving',
      'FAIL  the MT channel-based Broker has no default channel',
      'FAIL  scale-validate: deployment vmpool-system/scale-validate has 0 of 2 replicas available',
      'FAIL  the admission webhook does not answer, so every pool write is refused',
      'FAIL  Knative Service vmpool-system/reconcile-pool: no Ready condition yet: nothing has reconciled it (is Knative Serving running?)',
      'FAIL  ApiServerSource vmpool-system/vmpool: no Ready condition yet',
      'ok    Secret vmpool-system/vmpool-tls',
      'ok    ValidatingWebhookConfiguration vmpool-scale-validate: caBundle set',
      `ok    CRD ${POOL_CRD} (vmpool's)`,
      `ok    APIService ${APISERVICE} not registered yet`,
    ])
      expect(v.out).toContain(line);
  });

  it('an APIService registered before its backend answers is reported unavailable, for want of endpoints', async () => {
    expect((await readme('install-apiservice-plain-tls')).code).toBe(0);
    const v = await verify();
    expect(v.code).toBe(1);
    expect(v.out).toMatch(
      new RegExp(
        `FAIL  APIService ${APISERVICE.replace(/\./g, '\\.')}: Available=False \\(\\w+\\): .*scale-down-with`,
      ),
    );
  });

  it('passes verify once stand-ins do the controllers’ and nodes’ work, and the sample pool converges', async () => {
    // Knative's system components (their Deployments) and the Broker's channel.
    const version = { 'app.kubernetes.io/version': '1.22.0' };
    const serving = ['controller', 'activator', 'autoscaler', 'webhook'];
    const eventing = [
      'eventing-controller',
      'eventing-webhook',
      'mt-broker-controller',
      'mt-broker-filter',
      'mt-broker-ingress',
      'imc-controller',
      'imc-dispatcher',
    ];
    await availableDeployments('knative-serving', serving, version);
    await availableDeployments('knative-eventing', eventing, version);
    for (const d of serving) await markAvailable('knative-serving', d, 1);
    for (const d of eventing) await markAvailable('knative-eventing', d, 1);
    await kubectl(
      ['apply', '--server-side', '-f', '-'],
      toYaml([
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'config-br-default-channel', namespace: 'knative-eventing' },
          data: {
            'channel-template-spec':
              'apiVersion: messaging.knative.dev/v1\nkind: InMemoryChannel\n',
          },
        },
      ]),
    );

    // The two HTTPS functions, from their bundles, with the installed env and Secret.
    const certDir = join(co, 'mounted-tls');
    await sh(`mkdir -p ${certDir}`);
    for (const key of ['tls.crt', 'tls.key']) {
      const b64 = await kubectl([
        'get',
        'secret',
        'vmpool-tls',
        '-n',
        NAMESPACE,
        '-o',
        `jsonpath={.data.${key.replace('.', '\\.')}}`,
      ]);
      writeFileSync(join(certDir, key), Buffer.from(b64, 'base64'));
    }
    const https: Record<string, number> = {};
    for (const name of ['scale-validate', 'scale-down-with'] as const) {
      const env = await installedEnv('deployment', name);
      expect(env.TLS_CERT_FILE).toBe('/etc/vmpool/tls/tls.crt');
      https[name] = await startImage(name, {
        ...env,
        TLS_CERT_FILE: join(certDir, 'tls.crt'),
        TLS_KEY_FILE: join(certDir, 'tls.key'),
      });
      await markAvailable(NAMESPACE, name, 2);
      // The network: the Service reaches the process (ExternalName localhost, its port).
      const svc = JSON.parse(
        await kubectl(['get', 'service', name, '-n', NAMESPACE, '-o', 'json']),
      ) as {
        metadata: { labels: Record<string, string> };
      };
      await kubectl(['delete', 'service', name, '-n', NAMESPACE]);
      await kubectl(
        ['create', '-f', '-'],
        toYaml([
          {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name, namespace: NAMESPACE, labels: svc.metadata.labels },
            spec: {
              type: 'ExternalName',
              externalName: 'localhost',
              ports: [{ name: 'https', port: https[name], protocol: 'TCP' }],
            },
          },
        ]),
      );
    }
    const hookPatch = [0, 1].map((i) => ({
      op: 'replace',
      path: `/webhooks/${i}/clientConfig/service/port`,
      value: https['scale-validate'],
    }));
    await kubectl([
      'patch',
      'validatingwebhookconfiguration',
      'vmpool-scale-validate',
      '--type=json',
      '-p',
      JSON.stringify(hookPatch),
    ]);
    await kubectl([
      'patch',
      'apiservice',
      APISERVICE,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { service: { port: https['scale-down-with'] } } }),
    ]);

    // The two Knative Services' functions, from their bundles; Knative's controllers mark Ready.
    const reconcilePort = await startImage(
      'reconcile-pool',
      await installedEnv('services.serving.knative.dev', 'reconcile-pool'),
    );
    await startImage(
      'disk-gc-tick',
      await installedEnv('services.serving.knative.dev', 'disk-gc-tick'),
    );
    for (const ksvc of ['reconcile-pool', 'disk-gc-tick', 'vmpool-dead-letter'])
      await markTrue('services.serving.knative.dev', ksvc, 'Ready', NAMESPACE);
    await markTrue('brokers.eventing.knative.dev', 'vmpool', 'Ready', NAMESPACE);
    await markTrue('apiserversources.sources.knative.dev', 'vmpool', 'Ready', NAMESPACE);
    for (const p of ['vmpool-resync', 'vmpool-disk-gc'])
      await markTrue('pingsources.sources.knative.dev', p, 'Ready', NAMESPACE);
    for (const t of ['reconcile-pool-watch', 'reconcile-pool-resync', 'disk-gc-tick'])
      await markTrue('triggers.eventing.knative.dev', t, 'Ready', NAMESPACE);

    // The installed ApiServerSource's adapter, sinking into reconcile-pool: no Broker here, so the
    // adapter applies the installed watch Trigger's filters itself (what the Broker would deliver).
    const source = JSON.parse(
      await kubectl([
        'get',
        'apiserversources.sources.knative.dev',
        'vmpool',
        '-n',
        NAMESPACE,
        '-o',
        'json',
      ]),
    ) as { spec: ApiServerSourceSpec };
    const filters = await installedFilters('reconcile-pool-watch');
    expect(filters.length).toBeGreaterThan(0);
    adapter = await startAdapter({
      kubeconfigPath: cp().kubeconfigPath,
      binDir: inject('cluster').knativeBinDir,
      sink: `http://127.0.0.1:${reconcilePort}/`,
      name: 'vmpool',
      namespace: NAMESPACE,
      ...adapterConfigOf(source.spec, NAMESPACE),
      filters,
    });
    sim = startSimulator({
      kubeconfigPath: cp().kubeconfigPath,
      namespace: SAMPLE_NS,
      delays: {
        diskReady: 200,
        vmPending: 100,
        vmStarting: 200,
        vmStopping: 100,
        vmTerminating: 300,
      },
    });

    const v = await verify('--wait 60');
    expect(v.code, v.out).toBe(0);
    expect(v.out).toContain('all checks passed');
    expect(v.out).toContain('ok    the admission webhook answers');
    expect(v.out).toContain(`ok    APIService ${APISERVICE}: Available`);

    const sample = await readme('verify-pool');
    expect(sample.code, sample.out).toBe(0);
    expect(sample.out).toContain(`ok    pool ${SAMPLE_NS}/verify: 1 of 1 replicas ready`);
  });

  it('verify names an adapter that started before a CRD it watches, and EventPolicies while Eventing’s sender identity is off', async () => {
    // The adapter's pod as Eventing renders it (labels, its restricted securityContext), admitted
    // under the namespace's enforced restricted profile; no kubelet, so its status is written here.
    const pod = 'apiserversource-vmpool-standin';
    await kubectl(
      ['create', '-f', '-'],
      toYaml([
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name: pod,
            namespace: NAMESPACE,
            labels: {
              'eventing.knative.dev/source': 'apiserver-source-controller',
              'eventing.knative.dev/sourceName': 'vmpool',
              'sidecar.istio.io/inject': 'true',
            },
          },
          spec: {
            serviceAccountName: 'vmpool-source-adapter',
            containers: [
              {
                name: 'receive-adapter',
                image: 'registry.k8s.io/pause:3.10',
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  runAsNonRoot: true,
                  capabilities: { drop: ['ALL'] },
                  seccompProfile: { type: 'RuntimeDefault' },
                },
              },
            ],
          },
        },
      ]),
    );
    const startedAt = async (at: Date): Promise<void> => {
      const status = {
        phase: 'Running',
        containerStatuses: [
          {
            name: 'receive-adapter',
            ready: true,
            restartCount: 0,
            image: 'registry.k8s.io/pause:3.10',
            imageID: '',
            state: { running: { startedAt: at.toISOString().replace(/\.\d+Z$/, 'Z') } },
          },
        ],
      };
      await kubectl([
        'patch',
        'pod',
        pod,
        '-n',
        NAMESPACE,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status }),
      ]);
    };
    const created = await kubectl([
      'get',
      'crd',
      'virtualmachines.virtualization.deckhouse.io',
      '-o',
      'jsonpath={.metadata.creationTimestamp}',
    ]);
    await startedAt(new Date(Date.parse(created) - 60_000));
    let v = await verify('--controller');
    expect(v.code, v.out).toBe(1);
    expect(v.out).toMatch(
      /FAIL {2}the ApiServerSource adapter started \(\S+\) before CRD\(s\) virtualmachinepools\.virtualization\.deckhouse\.io virtualmachines\.virtualization\.deckhouse\.io virtualdisks\.virtualization\.deckhouse\.io existed: .*Restart it: kubectl -n vmpool-system rollout restart deployment -l eventing\.knative\.dev\/sourceName=vmpool/,
    );
    await startedAt(new Date());
    v = await verify('--controller');
    expect(v.code, v.out).toBe(0);
    expect(v.out).toContain(
      'ok    the ApiServerSource adapter started after the pool, VM and disk CRDs: it watches all three',
    );
    expect(v.out).toContain('ok    Eventing sender identity off: no EventPolicy in vmpool-system');

    // The oidc component's policies while config-features leaves authentication-oidc off.
    const policies = join(co, 'knative/overlays/oidc/eventpolicies.yaml');
    await kubectl(['apply', '--server-side', '--field-manager=vmpool', '-f', policies]);
    v = await verify('--controller');
    expect(v.code, v.out).toBe(1);
    expect(v.out).toContain(
      'FAIL  EventPolicies vmpool-ticks vmpool-watch in vmpool-system while authentication-oidc is off (knative-eventing/config-features): Knative marks them not Ready, so Broker vmpool-system/vmpool is not Ready',
    );
    const features = (data: Record<string, string>) =>
      kubectl(
        ['apply', '--server-side', '--force-conflicts', '-f', '-'],
        toYaml([
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: 'config-features', namespace: 'knative-eventing' },
            data,
          },
        ]),
      );
    await features({ 'authentication-oidc': 'enabled', 'default-authorization-mode': 'deny-all' });
    v = await verify('--controller');
    expect(v.code, v.out).toBe(0);
    expect(v.out).toContain('ok    Eventing sender identity on: EventPolicies admit');
    // deny-all without the component: every source event would be refused.
    await kubectl(['delete', '-f', policies]);
    v = await verify('--controller');
    expect(v.code, v.out).toBe(1);
    expect(v.out).toContain(
      'FAIL  EventPolicy vmpool-ticks vmpool-watch missing while authentication-oidc is on with default-authorization-mode deny-all',
    );
    await kubectl(['delete', 'configmap', 'config-features', '-n', 'knative-eventing']);
    await kubectl(['delete', 'pod', pod, '-n', NAMESPACE]);
    expect((await verify('--controller')).code).toBe(0);
  });

  it('Uninstall removes the controller and keeps every pool, VM and disk', async () => {
    const vms = await names(['virtualmachines', '-n', SAMPLE_NS]);
    const disks = await names(['virtualdisks', '-n', SAMPLE_NS]);
    expect(vms).toHaveLength(1);
    expect(disks).toHaveLength(2);
    const un = await readme('uninstall');
    expect(un.code).toBe(0);
    // Nothing runs vmpool any more.
    for (const p of procs) p.kill('SIGTERM');
    await adapter?.stop();
    adapter = undefined;
    await sim?.stop();
    sim = undefined;
    // The garbage collector has had its chance to act on anything whose owner went away.
    await sleep(3000);
    expect(await names(['crd', POOL_CRD])).toHaveLength(1);
    expect(await names(['virtualmachinepools', '-n', SAMPLE_NS])).toEqual([
      'virtualmachinepool.virtualization.deckhouse.io/verify',
    ]);
    expect(await names(['virtualmachines', '-n', SAMPLE_NS])).toEqual(vms);
    expect(await names(['virtualdisks', '-n', SAMPLE_NS])).toEqual(disks);
    const label = ['-l', 'app.kubernetes.io/part-of=vmpool'];
    expect(
      await names([
        'apiservice,validatingwebhookconfiguration,clusterrole,clusterrolebinding,priorityclass',
        ...label,
      ]),
    ).toEqual([]);
    expect(await names(['rolebinding', '-n', 'kube-system', ...label])).toEqual([]);
    expect(await names(['namespace', NAMESPACE])).toEqual([]);
    // And discovery is whole again: no APIService is left unavailable.
    expect(
      await kubectl([
        'get',
        'apiservices',
        '-o',
        'jsonpath={.items[*].status.conditions[?(@.type=="Available")].status}',
      ]),
    ).not.toContain('False');
  });

  it('removing the CRD after the orphaning step keeps the VMs and disks, owned by no pool', async () => {
    const vms = await names(['virtualmachines', '-n', SAMPLE_NS]);
    const disks = await names(['virtualdisks', '-n', SAMPLE_NS]);
    const rm = await readme('remove-crd-keep-vms');
    expect(rm.code, rm.out).toBe(0);
    expect(await names(['crd', POOL_CRD])).toEqual([]);
    await sleep(3000);
    expect(await names(['virtualmachines', '-n', SAMPLE_NS])).toEqual(vms);
    expect(await names(['virtualdisks', '-n', SAMPLE_NS])).toEqual(disks);
    const owners = await kubectl([
      'get',
      'virtualmachines,virtualdisks',
      '-n',
      SAMPLE_NS,
      '-o',
      'jsonpath={range .items[*]}{.kind}/{.metadata.name}:{range .metadata.ownerReferences[*]}{.kind}{" "}{end}{"\\n"}{end}',
    ]);
    expect(owners).not.toContain('VirtualMachinePool');
    // The Delete-policy disk stays owned by its VM; the labels stay too.
    expect(owners).toMatch(/VirtualDisk\/[a-z0-9-]+-root:VirtualMachine /);
    const labels = await kubectl([
      'get',
      'virtualmachines',
      '-n',
      SAMPLE_NS,
      '-o',
      `jsonpath={.items[0].metadata.labels.${keys.pool.replace(/\./g, '\\.')}}`,
    ]);
    expect(labels).toBe('verify');
  });
});
