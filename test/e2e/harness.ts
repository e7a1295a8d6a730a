/**
 * Helpers of the e2e tests: clients for the shared control plane, a namespace per test file, and
 * polling with readable failures.
 * @module
 */
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { inject } from 'vitest';
import { API_VERSION, GROUP, VERSION } from '../../shared/api/meta.js';
import { mintServingCert, type KeyPair } from '../../local/controlplane/certs.js';
import { runKubectl, runKubectlFull, toYaml } from '../../local/controlplane/kubectl.js';
import type { Kube, KubeOptions } from '../../shared/kube/index.js';
import { createKube } from '../../shared/kube/index.js';
import type { FunctionName } from './rbac.js';
import { serviceAccountKubeConfig } from './rbac.js';

/** A JSON object from the API server. */
export type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

/** Clients bound to the shared control plane. */
export function cluster() {
  const info = inject('cluster');
  const kc = new KubeConfig();
  kc.loadFromFile(info.kubeconfigPath);
  return {
    info,
    applyManifest: (objects: readonly object[]) =>
      runKubectl(
        join(info.binDir, 'kubectl'),
        info.kubeconfigPath,
        ['apply', '--server-side', '-f', '-'],
        toYaml(objects),
      ),
    custom: kc.makeApiClient(CustomObjectsApi),
    core: kc.makeApiClient(CoreV1Api),
    kubectl: (args: string[], input?: string) =>
      runKubectl(join(info.binDir, 'kubectl'), info.kubeconfigPath, args, input),
    /** kubectl keeping stderr of a success, where it prints the API server's warnings. */
    kubectlFull: (args: string[], input?: string) =>
      runKubectlFull(join(info.binDir, 'kubectl'), info.kubeconfigPath, args, input),
  };
}

/** Creates a uniquely named namespace; tests isolate from each other by namespace. */
export async function newNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  // client-node serializes plain JSON by its field table, so no model class is needed.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
  await cluster().core.createNamespace({ body: { metadata: { name } } });
  return name;
}

/** Deletes a namespace without waiting (the namespace controller finishes it). */
export async function dropNamespace(name: string): Promise<void> {
  await cluster()
    .core.deleteNamespace({ name })
    .catch(() => undefined);
}

/** Request coordinates of a namespaced virtualization.deckhouse.io resource. */
export function res(plural: string, namespace: string) {
  return { group: GROUP, version: VERSION, plural, namespace };
}

/** Creates a namespaced custom object (apiVersion filled in). */
export async function create(plural: string, namespace: string, body: object): Promise<Obj> {
  return (await cluster().custom.createNamespacedCustomObject({
    ...res(plural, namespace),
    body: { apiVersion: API_VERSION, ...body },
  })) as Obj;
}

/** Reads a namespaced custom object, or undefined when it does not exist. */
export async function read(
  plural: string,
  namespace: string,
  name: string,
): Promise<Obj | undefined> {
  try {
    return (await cluster().custom.getNamespacedCustomObject({
      ...res(plural, namespace),
      name,
    })) as Obj;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

/** The API server's error text of a failed call (client-node puts the Status JSON in `body`). */
export function errorText(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  if (typeof body === 'string') return body;
  return body === undefined ? String(err) : JSON.stringify(body);
}

/** Polls `probe` until it returns a value other than undefined; fails with `what` and the last value. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms: ${what}${last instanceof Error ? ` (last error: ${last.message})` : ''}`,
      );
    }
    await sleep(100);
  }
}

/** A serving cert for `<service>.<namespace>.svc` from the plane's webhook CA, plus that CA's PEM. */
export function servingCert(service: string, namespace: string): { cert: KeyPair; caPem: string } {
  const { info } = cluster();
  const webhookCa: KeyPair = {
    certPath: info.webhookCaCert,
    keyPath: info.webhookCaKey,
    certPem: readFileSync(info.webhookCaCert, 'utf8'),
    keyPem: readFileSync(info.webhookCaKey, 'utf8'),
  };
  const cert = mintServingCert({ dir: info.pkiDir, webhookCa }, service, namespace);
  return { cert, caPem: webhookCa.certPem };
}

/**
 * The Kube a function under test gets: a token of its own ServiceAccount, bound by knative/base's
 * RBAC (applied by the global setup), never the admin identity.
 */
export async function functionKube(name: FunctionName, opts: KubeOptions = {}): Promise<Kube> {
  const { info } = cluster();
  return createKube(await serviceAccountKubeConfig(info, name), opts);
}

/** The messages of the Events of `reason` in a namespace, as `kubectl get events` lists them. */
export async function eventMessages(namespace: string, reason: string): Promise<string[]> {
  const out = JSON.parse(
    await cluster().kubectl([
      'get',
      'events',
      '-n',
      namespace,
      '--field-selector',
      `reason=${reason}`,
      '-o',
      'json',
    ]),
  ) as { items: Array<{ message?: string; note?: string }> };
  return out.items.map((e) => e.message ?? e.note ?? '');
}
