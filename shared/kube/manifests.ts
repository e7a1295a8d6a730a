/**
 * Manifests as raw JSON: get, create, server-side apply, replace and delete of whole objects vmpool
 * installs (CRDs, APIServices, webhook configurations, Services). Part of the one funnel to the API
 * server.
 *
 * Why not client-node's typed `KubernetesObjectApi`: its serializer knows only the model's property
 * names and drops the rest, among them every `x-kubernetes-*` key of a CRD schema. A CRD's
 * `openAPIV3Schema` is atomic under server-side apply, so one such apply silently replaces the whole
 * served schema with the mangled one. Here the body is `JSON.stringify` of the object as given.
 * @module
 */
import { request } from 'node:https';
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_VERSION, CLAIM_API_VERSION, StoredObject, describeRef, refOf } from '../api/index.js';
import type { ObjectRef } from '../api/index.js';
import { NO_HTTP_STATUS, failure, reasonOf } from './failure.js';
import { backoffMs, defaultRetryPolicy, sleep } from './retry.js';
import type { Outcome, Preconditions } from './types.js';

/** Where each kind vmpool installs is served: its plural and whether it is namespaced. */
const RESOURCES: Readonly<Record<string, { plural: string; namespaced: boolean }>> = {
  'apiextensions.k8s.io/v1/CustomResourceDefinition': {
    plural: 'customresourcedefinitions',
    namespaced: false,
  },
  'apiregistration.k8s.io/v1/APIService': { plural: 'apiservices', namespaced: false },
  'admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration': {
    plural: 'validatingwebhookconfigurations',
    namespaced: false,
  },
  'v1/Namespace': { plural: 'namespaces', namespaced: false },
  'v1/Service': { plural: 'services', namespaced: true },
  [`${API_VERSION}/VirtualMachinePool`]: { plural: 'virtualmachinepools', namespaced: true },
  // The kubectl plugin's claim and release.
  [`${CLAIM_API_VERSION}/VirtualMachineClaim`]: {
    plural: 'virtualmachineclaims',
    namespaced: true,
  },
};

/** Options of {@link createManifests}. */
export interface ManifestsOptions {
  /** `fieldManager` of every apply (default `vmpool`): how vmpool's writes show in managedFields. */
  readonly fieldManager?: string;
  /** Per-request timeout in ms (default 15 000). */
  readonly timeoutMs?: number;
}

/** Options of one apply. */
export interface ApplyOptions {
  /** Take over fields another manager set (`force=true`); only for objects vmpool owns. */
  readonly force?: boolean;
}

/** Raw-JSON access to whole objects. Expected failures are values. */
export interface Manifests {
  get(ref: ObjectRef): Promise<Outcome<StoredObject>>;
  /**
   * Create (POST) of the object exactly as given: an object of that name already there is an
   * `alreadyExists` failure, never merged into.
   */
  create(obj: object): Promise<Outcome<StoredObject>>;
  /**
   * Server-side apply of the object exactly as given (JSON, no model in between). A
   * `metadata.resourceVersion` in it is a precondition: another version is a `conflict` failure.
   */
  apply(obj: object, opts?: ApplyOptions): Promise<Outcome<StoredObject>>;
  /** Update (PUT) of the whole object, conditioned on its `metadata.resourceVersion`. */
  replace(obj: object): Promise<Outcome<StoredObject>>;
  /** Deletes with a uid precondition, so a successor of the same name is never hit. */
  remove(ref: ObjectRef, pre: Preconditions): Promise<Outcome<undefined>>;
  /**
   * A JSON request by path, for what no model covers: discovery, events, an aggregated API's
   * subresources. The answer is the parsed JSON body; a refusal is the Status's reason and words.
   */
  request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Outcome<unknown>>;
}

/** The path of an object (or of its collection when `name` is empty). */
export function pathOf(ref: ObjectRef): string | undefined {
  const r = RESOURCES[`${ref.apiVersion}/${ref.kind}`];
  if (r === undefined) return undefined;
  const root = ref.apiVersion === 'v1' ? '/api/v1' : `/apis/${ref.apiVersion}`;
  const ns = r.namespaced ? `/namespaces/${encodeURIComponent(ref.namespace ?? 'default')}` : '';
  return `${root}${ns}/${r.plural}/${encodeURIComponent(ref.name)}`;
}

interface RawResponse {
  readonly status: number;
  readonly body: string;
}

/** The metav1.Status message of an error body, or the body's start. */
function messageOf(res: RawResponse): { message: string; reason?: string } {
  try {
    const s = JSON.parse(res.body) as { message?: unknown; reason?: unknown };
    const message = typeof s.message === 'string' ? s.message : `HTTP ${res.status}`;
    return typeof s.reason === 'string' ? { message, reason: s.reason } : { message };
  } catch {
    return { message: res.body.slice(0, 500) || `HTTP ${res.status}` };
  }
}

/**
 * Creates the manifest funnel over the kubeconfig's server and credentials (TLS client certificate,
 * token or exec plugin, as client-node resolves them).
 */
export function createManifests(kc: KubeConfig, opts: ManifestsOptions = {}): Manifests {
  const fieldManager = opts.fieldManager ?? 'vmpool';
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const server = kc.getCurrentCluster()?.server ?? '';

  async function send(method: string, path: string, body?: string, type?: string) {
    const options: RequestOptions = { method, headers: { accept: 'application/json' } };
    await kc.applyToHTTPSOptions(options);
    const headers = {
      ...(options.headers as Record<string, string>),
      ...(body === undefined
        ? {}
        : {
            'content-type': type ?? 'application/json',
            'content-length': Buffer.byteLength(body),
          }),
    };
    return new Promise<RawResponse>((ok, fail) => {
      const req = request(
        new URL(path, server),
        { ...options, headers, timeout: timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            ok({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', fail);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
      req.on('error', fail);
      req.end(body);
    });
  }

  /** One request, retried while transient (network, 429, 5xx) within the default policy. */
  async function call<T>(
    method: string,
    ref: ObjectRef,
    query: string,
    parse: (raw: unknown) => Outcome<T>,
    body?: string,
    type?: string,
  ): Promise<Outcome<T>> {
    const path = pathOf(ref);
    if (path === undefined)
      return failure('invalid', NO_HTTP_STATUS, `${describeRef(ref)}: not a kind vmpool installs`);
    return callPath(method, `${path}${query}`, parse, body, type);
  }

  async function callPath<T>(
    method: string,
    path: string,
    parse: (raw: unknown) => Outcome<T>,
    body?: string,
    type?: string,
  ): Promise<Outcome<T>> {
    for (let attempt = 1; ; attempt++) {
      let out: Outcome<T>;
      try {
        const res = await send(method, path, body, type);
        if (res.status >= 200 && res.status < 300) {
          let raw: unknown;
          try {
            raw = res.body === '' ? {} : JSON.parse(res.body);
          } catch {
            raw = undefined;
          }
          out = parse(raw);
        } else {
          const m = messageOf(res);
          out = failure(reasonOf(res.status, m.reason), res.status, m.message);
        }
      } catch (err) {
        out = failure(
          'transient',
          NO_HTTP_STATUS,
          err instanceof Error ? err.message : String(err),
        );
      }
      if (out.ok || out.reason !== 'transient' || attempt >= defaultRetryPolicy.attempts)
        return out;
      await sleep(backoffMs(defaultRetryPolicy, attempt - 1, Math.random));
    }
  }

  const stored =
    (ref: ObjectRef) =>
    (raw: unknown): Outcome<StoredObject> => {
      const r = StoredObject.safeParse(raw);
      return r.success
        ? { ok: true, value: r.data }
        : failure('invalid', NO_HTTP_STATUS, `API server returned a malformed ${describeRef(ref)}`);
    };

  return {
    request: (method, path, body) =>
      callPath(
        method,
        path,
        (raw): Outcome<unknown> => ({ ok: true, value: raw }),
        body === undefined ? undefined : JSON.stringify(body),
      ),
    get: (ref) => call('GET', ref, '', stored(ref)),
    create(obj) {
      const ref = refOf(obj);
      const path = pathOf(ref);
      if (path === undefined)
        return Promise.resolve(
          failure('invalid', NO_HTTP_STATUS, `${describeRef(ref)}: not a kind vmpool installs`),
        );
      // The collection: the object's path without its last segment (its name).
      const collection = path.slice(0, path.lastIndexOf('/'));
      const query = `?fieldManager=${encodeURIComponent(fieldManager)}`;
      return callPath('POST', `${collection}${query}`, stored(ref), JSON.stringify(obj));
    },
    replace(obj) {
      const ref = refOf(obj);
      const query = `?fieldManager=${encodeURIComponent(fieldManager)}`;
      return call('PUT', ref, query, stored(ref), JSON.stringify(obj));
    },
    apply(obj, applyOpts = {}) {
      const ref = refOf(obj);
      const query = `?fieldManager=${encodeURIComponent(fieldManager)}&force=${applyOpts.force === true ? 'true' : 'false'}`;
      // JSON is YAML: the apply-patch content type takes the bytes as they are.
      return call(
        'PATCH',
        ref,
        query,
        stored(ref),
        JSON.stringify(obj),
        'application/apply-patch+yaml',
      );
    },
    remove(ref, pre) {
      const body = JSON.stringify({
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: 'Background',
        preconditions: {
          uid: pre.uid,
          ...(pre.resourceVersion === undefined ? {} : { resourceVersion: pre.resourceVersion }),
        },
      });
      return call(
        'DELETE',
        ref,
        '',
        (): Outcome<undefined> => ({ ok: true, value: undefined }),
        body,
      );
    },
  };
}
