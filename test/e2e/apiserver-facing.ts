/**
 * vmpool's API-server-facing functions wired to the test control plane as in a cluster:
 * scale-validate behind a ValidatingWebhookConfiguration (pool CREATE/UPDATE, `/scale` UPDATE and
 * claim CREATE/UPDATE, scoped to one namespace) and scale-down-with behind the APIService
 * `v1alpha2.subresources.virtualization.deckhouse.io` (an ExternalName Service `localhost`, see
 * control-plane.md §3(a),(b)). Both serve HTTPS on 127.0.0.1 with certificates minted for
 * `<svc>.<ns>.svc`. Also: real users with client certificates, and HTTPS helpers with percentiles.
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { inject } from 'vitest';
import {
  CLAIM_PATH,
  POOL_PATH,
  SCALE_PATH,
  buildValidateApp,
} from '../../functions/scale-validate/app.js';
import { buildScaleDownApp } from '../../functions/scale-down-with/app.js';
import {
  CLAIM_GROUP,
  CLAIM_VERSION,
  GROUP,
  SUBRESOURCES_GROUP,
  VERSION,
  scaleDownWithPath as pathUnder,
} from '../../shared/api/index.js';
import { caFile, serveApp } from '../../shared/http/index.js';
import { WEBHOOK_CLIENT_CN } from '../../local/controlplane/admission-config.js';
import type { Logger, ServedApp } from '../../shared/http/index.js';
import type { Kube } from '../../shared/kube/index.js';
import type { Answer, Call } from '../../local/controlplane/http.js';
import { requestText } from '../../local/controlplane/http.js';
import type { KeyPair } from '../../local/controlplane/certs.js';
import { kubeconfigYaml, mintLeaf } from '../../local/controlplane/certs.js';
import { runKubectl } from '../../local/controlplane/kubectl.js';
import {
  cluster,
  dropNamespace,
  eventually,
  functionKube,
  newNamespace,
  servingCert,
} from './harness.js';
import { runnersPool } from '../../local/guide.js';
import { FUNCTIONS_NAMESPACE } from './rbac.js';
import { testLog } from '../logs.js';

/** The APIService name: cluster-scoped, so one test file at a time may own it. */
export const API_SERVICE = `${VERSION}.${SUBRESOURCES_GROUP}`;

/** The scaledownwith path of a pool, as the user guide prints it. */
export function scaleDownWithPath(namespace: string, pool: string): string {
  return pathUnder(SUBRESOURCES_GROUP, namespace, pool);
}

/** Handler time (ms) per path, measured around the app's fetch. */
export type Timings = Map<string, number[]>;

/** The running functions and their registrations. */
export interface ApiserverFacing {
  /** Namespace of the ExternalName Service (and of the serving certificates' DNS names). */
  readonly systemNamespace: string;
  readonly webhookPort: number;
  readonly scaleDownPort: number;
  /** PEM of the CA that signed both serving certificates. */
  readonly caPem: string;
  /** Handler times by request path. */
  readonly timings: Timings;
  /** Requests each server answered, by path (probes included). */
  calls(path: string): number;
  /** Unregisters (APIService first, so namespace deletion keeps full discovery), then stops. */
  stop(): Promise<void>;
}

/** Function logs: silent unless `VMPOOL_E2E_LOG` names a level. */
const silent = (name: string): Logger => testLog(name, process.env.VMPOOL_E2E_LOG || 'silent');

type FetchApp = { fetch: (request: Request, env: never) => Response | Promise<Response> };

/** Wraps an app so every request's handler time lands in `timings` under its path. */
function timed(app: FetchApp, timings: Timings): FetchApp {
  return {
    fetch: async (req, env) => {
      const t0 = performance.now();
      try {
        return await app.fetch(req, env);
      } finally {
        const path = new URL(req.url).pathname;
        const list = timings.get(path) ?? [];
        list.push(performance.now() - t0);
        timings.set(path, list);
      }
    },
  };
}

/** Options of {@link startApiserverFacing}. */
export interface FacingOptions {
  /** scale-validate's Kube (default: its own ServiceAccount's). */
  readonly validateKube?: Kube;
  /** scale-down-with's Kube (default: its own ServiceAccount's). */
  readonly scaleDownKube?: Kube;
  /** Loggers of the two functions (default silent, or `VMPOOL_E2E_LOG`). */
  readonly log?: (name: string) => Logger;
  /**
   * The user scale-validate lets add scaledownwith targets (default: scale-down-with's own
   * ServiceAccount on this plane, as knative/base's is in a cluster).
   */
  readonly recorder?: string;
}

/**
 * Serves both functions, registers them for `testNamespace`, and waits until the APIService is
 * Available and the webhook configuration is in force.
 */
export async function startApiserverFacing(
  testNamespace: string,
  opts: FacingOptions = {},
): Promise<ApiserverFacing> {
  const c = cluster();
  process.env.KUBECONFIG = c.info.kubeconfigPath;
  const validateKube = opts.validateKube ?? (await functionKube('scale-validate'));
  const scaleDownKube = opts.scaleDownKube ?? (await functionKube('scale-down-with'));
  const logOf = opts.log ?? silent;
  const systemNamespace = await newNamespace('vmpool-system');
  const webhookSvc = 'vmpool-scale-validate';
  const apiSvc = 'vmpool-api';
  const hook = servingCert(webhookSvc, systemNamespace);
  const api = servingCert(apiSvc, systemNamespace);
  const timings: Timings = new Map();
  const served: ServedApp[] = [];
  const hookName = `vmpool-e2e-${testNamespace}`;
  const stop = async () => {
    await c
      .kubectl(['delete', 'apiservice', API_SERVICE, '--ignore-not-found', '--wait=true'])
      .catch(() => undefined);
    await c
      .kubectl(['delete', 'validatingwebhookconfiguration', hookName, '--ignore-not-found'])
      .catch(() => undefined);
    await Promise.all(served.map((s) => s.close()));
    await dropNamespace(systemNamespace);
  };
  try {
    // The plane's kube-apiserver presents its webhook client certificate (admission-config.ts):
    // the webhook takes reviews from it alone, as WEBHOOK_CLIENT_CA_FILE makes it in a cluster.
    const clientCa = caFile(join(inject('cluster').pkiDir, 'webhook-client-ca.crt'));
    const validate = serveApp(
      timed(
        buildValidateApp({
          kube: validateKube,
          log: logOf('scale-validate'),
          clientCa,
          clientNames: [WEBHOOK_CLIENT_CN],
          recorder: opts.recorder ?? `system:serviceaccount:${FUNCTIONS_NAMESPACE}:scale-down-with`,
        }),
        timings,
      ),
      {
        port: 0,
        hostname: '127.0.0.1',
        tls: { certFile: hook.cert.certPath, keyFile: hook.cert.keyPath, requestCert: true },
        handleSignals: false,
      },
    );
    served.push(validate);
    const scaleDown = serveApp(
      timed(buildScaleDownApp({ kube: scaleDownKube, log: logOf('scale-down-with') }), timings),
      {
        port: 0,
        hostname: '127.0.0.1',
        tls: { certFile: api.cert.certPath, keyFile: api.cert.keyPath, requestCert: true },
        handleSignals: false,
      },
    );
    served.push(scaleDown);
    const webhookPort = (await validate.listening).port;
    const scaleDownPort = (await scaleDown.listening).port;
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    const common = {
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Fail',
      timeoutSeconds: 10,
      // Only the test's namespace: the other e2e files share the plane.
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': testNamespace } },
    };
    const clientConfig = (path: string) => ({
      url: `https://127.0.0.1:${String(webhookPort)}${path}`,
      caBundle: b64(hook.caPem),
    });
    await c.applyManifest([
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: hookName },
        webhooks: [
          {
            ...common,
            name: 'vmpool.virtualization-controller.validate.d8-virtualization',
            clientConfig: clientConfig(POOL_PATH),
            rules: [
              {
                apiGroups: [GROUP],
                apiVersions: [VERSION],
                operations: ['CREATE', 'UPDATE'],
                resources: ['virtualmachinepools'],
              },
            ],
          },
          {
            ...common,
            name: 'vmpool-scale.virtualization-controller.validate.d8-virtualization',
            clientConfig: clientConfig(SCALE_PATH),
            // The CR's own group: `autoscaling` would never match (kubernetes#113594).
            rules: [
              {
                apiGroups: [GROUP],
                apiVersions: [VERSION],
                operations: ['UPDATE'],
                resources: ['virtualmachinepools/scale'],
              },
            ],
          },
          {
            ...common,
            name: 'vmpool-claim.virtualization-controller.validate.d8-virtualization',
            clientConfig: clientConfig(CLAIM_PATH),
            rules: [
              {
                apiGroups: [CLAIM_GROUP],
                apiVersions: [CLAIM_VERSION],
                operations: ['CREATE', 'UPDATE'],
                resources: ['virtualmachineclaims'],
              },
            ],
          },
        ],
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: apiSvc, namespace: systemNamespace },
        spec: {
          type: 'ExternalName',
          externalName: 'localhost',
          ports: [{ name: 'https', port: scaleDownPort, protocol: 'TCP' }],
        },
      },
      {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: API_SERVICE },
        spec: {
          group: SUBRESOURCES_GROUP,
          version: VERSION,
          groupPriorityMinimum: 1000,
          versionPriority: 15,
          service: { namespace: systemNamespace, name: apiSvc, port: scaleDownPort },
          caBundle: b64(api.caPem),
        },
      },
    ]);
    await c.kubectl([
      'wait',
      '--for=condition=Available',
      '--timeout=60s',
      `apiservice/${API_SERVICE}`,
    ]);
    // Webhook configurations reach the admission chain asynchronously: wait until a server-side
    // dry-run create of a pool in the namespace is seen by the webhook.
    await eventually('the pool webhook to be called', async () => {
      await c.custom
        .createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          plural: 'virtualmachinepools',
          namespace: testNamespace,
          body: { apiVersion: `${GROUP}/${VERSION}`, ...runnersPool(testNamespace, 'probe') },
          dryRun: 'All',
        })
        .catch(() => undefined);
      return (timings.get(POOL_PATH)?.length ?? 0) > 0 ? true : undefined;
    });
    return {
      systemNamespace,
      webhookPort,
      scaleDownPort,
      caPem: api.caPem,
      timings,
      calls: (path) => timings.get(path)?.length ?? 0,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A real user of the plane: a client certificate from its client CA and a kubeconfig with it. */
export interface TestUser {
  readonly name: string;
  readonly kubeconfigPath: string;
  readonly cert: KeyPair;
  /** kubectl as this user; rejects with stderr. */
  kubectl(args: string[], input?: string): Promise<string>;
}

/** Mints a client certificate CN=`name` (O=`groups`) and writes a kubeconfig for it. */
export function testUser(name: string, groups: string[] = []): TestUser {
  const { info } = cluster();
  const pair = (base: string): KeyPair => {
    const certPath = join(info.pkiDir, `${base}.crt`);
    const keyPath = join(info.pkiDir, `${base}.key`);
    return {
      certPath,
      keyPath,
      certPem: readFileSync(certPath, 'utf8'),
      keyPem: readFileSync(keyPath, 'utf8'),
    };
  };
  const cert = mintLeaf(info.pkiDir, `user-${name}`, pair('client-ca'), {
    cn: name,
    orgs: groups,
    usage: 'client',
  });
  const kubeconfigPath = join(info.pkiDir, `user-${name}.kubeconfig`);
  writeFileSync(kubeconfigPath, kubeconfigYaml(info.server, pair('serving-ca'), cert), {
    mode: 0o600,
  });
  return {
    name,
    kubeconfigPath,
    cert,
    kubectl: (args, input) => runKubectl(join(info.binDir, 'kubectl'), kubeconfigPath, args, input),
  };
}

/** The admin, front-proxy and serving-CA key pairs of the plane. */
export function planePki(): { admin: KeyPair; frontProxy: KeyPair; servingCaPem: string } {
  const { info } = cluster();
  const pair = (base: string): KeyPair => ({
    certPath: join(info.pkiDir, `${base}.crt`),
    keyPath: join(info.pkiDir, `${base}.key`),
    certPem: readFileSync(join(info.pkiDir, `${base}.crt`), 'utf8'),
    keyPem: readFileSync(join(info.pkiDir, `${base}.key`), 'utf8'),
  });
  return {
    admin: pair('admin'),
    frontProxy: pair('front-proxy-client'),
    servingCaPem: readFileSync(join(info.pkiDir, 'serving-ca.crt'), 'utf8'),
  };
}

export type { Answer } from '../../local/controlplane/http.js';

/** One HTTPS request with a JSON body; never rejects on an HTTP error status. */
export function httpsJson(call: Call & { readonly ca: string }): Promise<Answer> {
  return requestText(call);
}

/** p50/p99/max of durations (ms), rounded to 0.1 ms. */
export function percentiles(ms: readonly number[]): { p50: number; p99: number; max: number } {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? NaN;
  const r = (x: number) => Math.round(x * 10) / 10;
  return { p50: r(at(0.5)), p99: r(at(0.99)), max: r(s[s.length - 1] ?? NaN) };
}

/** Prints one `[latency]` line. */
export function reportLatency(what: string, ms: readonly number[]): void {
  const p = percentiles(ms);
  console.log(
    `[latency] ${what}: n=${String(ms.length)} p50=${String(p.p50)}ms p99=${String(p.p99)}ms max=${String(p.max)}ms`,
  );
}
