/**
 * The registrations `npm start` makes in a cluster (the admission webhook configuration, the
 * scaledownwith APIService and the Service it names) and how a later run finds the ones a dead run
 * left: they carry vmpool's ownership label, a managedFields entry of vmpool's field manager, and
 * point at `npm start`'s own namespace. A registration left pointing at a dead process is harmful:
 * an APIService without a backend makes discovery fail, which stalls the garbage collector and
 * namespace deletion; a webhook without one refuses every pool write (failurePolicy Fail).
 * @module
 */
import type { ObjectRef, StoredObject } from '../shared/api/index.js';
import { describeRef } from '../shared/api/index.js';
import type { Manifests } from '../shared/kube/index.js';
import { removeOwned } from './install.js';
import { FIELD_MANAGER, MANAGED_BY, ownedByVmpool } from './ownership.js';

/** The name of `npm start`'s ValidatingWebhookConfiguration (local/wiring.ts). */
export const WEBHOOK_CONFIGURATION = 'vmpool-local';

/** The kinds `npm start` registers, by list path. */
const KINDS: ReadonlyArray<{
  readonly apiVersion: string;
  readonly kind: string;
  readonly path: string;
}> = [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    path: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  },
  {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    path: '/apis/apiregistration.k8s.io/v1/apiservices',
  },
  { apiVersion: 'v1', kind: 'Service', path: '/api/v1/services' },
];

/** True when `obj` is one of `npm start`'s registrations in `namespace` (see the module note). */
export function isRunRegistration(obj: StoredObject, kind: string, namespace: string): boolean {
  if (!ownedByVmpool(obj)) return false;
  if (!(obj.metadata.managedFields ?? []).some((m) => m.manager === FIELD_MANAGER)) return false;
  const spec = (obj as { spec?: { service?: { namespace?: unknown } } }).spec;
  switch (kind) {
    case 'ValidatingWebhookConfiguration':
      return obj.metadata.name === WEBHOOK_CONFIGURATION;
    case 'APIService':
      return spec?.service?.namespace === namespace;
    default:
      return obj.metadata.namespace === namespace;
  }
}

/**
 * Removes every registration of `npm start` in the cluster (webhook configuration and APIService
 * first, the Service last), each only while it is still vmpool's (uid precondition). Never touches
 * a pool, a VM or a disk. Returns one line per object removed or left, and per failed list.
 */
export async function removeRunRegistrations(m: Manifests, namespace: string): Promise<string[]> {
  const lines: string[] = [];
  for (const k of KINDS) {
    const listed = await m.request(
      'GET',
      `${k.path}?labelSelector=${encodeURIComponent(`${MANAGED_BY}=vmpool`)}`,
    );
    if (!listed.ok) {
      lines.push(`cannot list ${k.kind}s: ${listed.message}`);
      continue;
    }
    const items = ((listed.value as { items?: StoredObject[] }).items ?? []).filter((o) =>
      isRunRegistration(o, k.kind, namespace),
    );
    for (const o of items) {
      const ref: ObjectRef = {
        apiVersion: k.apiVersion,
        kind: k.kind,
        name: o.metadata.name ?? '',
        ...(o.metadata.namespace === undefined ? {} : { namespace: o.metadata.namespace }),
      };
      const problem = await removeOwned(m, ref);
      lines.push(problem ?? `removed ${describeRef(ref)}`);
    }
  }
  return lines;
}
