/**
 * The objects that make the kube-apiserver call this process: the ValidatingWebhookConfiguration
 * (by URL on 127.0.0.1) and the APIService (through an ExternalName Service to localhost, since no
 * kube-proxy runs).
 * @module
 */
import type { StoredObject } from '../shared/api/index.js';
import {
  CLAIM_GROUP,
  CLAIM_VERSION,
  OWN_SUBRESOURCES_GROUP,
  SUBRESOURCES_GROUP,
  VERSION,
} from '../shared/api/index.js';
import { CLAIM_PATH, POOL_PATH, SCALE_PATH } from '../functions/scale-validate/app.js';
import { ownedByVmpool, provenance } from './ownership.js';

/** Where the local HTTPS functions listen, and the CA that signed their certificate. */
export interface LocalEndpoints {
  readonly validatePort: number;
  readonly scaleDownPort: number;
  readonly caPem: string;
  /** Namespace of the ExternalName Service. */
  readonly namespace: string;
  /** The aggregated group the APIService registers (see {@link chooseGroup}). */
  readonly group: string;
}

/** The APIService name of an aggregated group (version `v1alpha2`). */
export function apiServiceName(group: string): string {
  return `${VERSION}.${group}`;
}

/** The group `scaledownwith` is served under, and why. */
export interface GroupChoice {
  readonly group: string;
  /** A sentence for the start-up log. */
  readonly why: string;
}

/**
 * Which group to serve `scaledownwith` under. An explicit choice wins. Otherwise the reference's
 * group, unless another backend already serves it (on the virtualization platform that APIService is
 * the platform's own aggregated API: VM console, VNC, hot-plug, migration; taking it over would cut
 * every VM of the cluster off from them), in which case vmpool's own group.
 * @param requested `--scaledownwith-group`, if given
 * @param registered the stored APIService of the reference's group, if any
 */
export function chooseGroup(
  requested: string | undefined,
  registered: StoredObject | undefined,
): GroupChoice {
  if (requested !== undefined && requested !== '')
    return { group: requested, why: `${requested} as asked (--scaledownwith-group)` };
  if (registered === undefined)
    return { group: SUBRESOURCES_GROUP, why: `${SUBRESOURCES_GROUP}: free` };
  if (ownedByVmpool(registered))
    return {
      group: SUBRESOURCES_GROUP,
      why: `${SUBRESOURCES_GROUP}: vmpool's from an earlier run`,
    };
  const spec = (registered as { spec?: { service?: { namespace?: string; name?: string } } }).spec;
  const backend =
    spec?.service === undefined
      ? 'a local backend'
      : `Service ${spec.service.namespace ?? ''}/${spec.service.name ?? ''}`;
  return {
    group: OWN_SUBRESOURCES_GROUP,
    why: `APIService ${apiServiceName(SUBRESOURCES_GROUP)} is served by ${backend} (${provenance(registered)}) and is left untouched; vmpool serves scaledownwith under its own group ${OWN_SUBRESOURCES_GROUP}`,
  };
}

/** Name of the Service the APIService points at (and the certificate's `<svc>.<ns>.svc`). */
export const SCALE_DOWN_SERVICE = 'scale-down-with';

/** The webhook configuration, the Namespace, the Service and the APIService for `npm start`. */
export function wiring(e: LocalEndpoints): object[] {
  const caBundle = Buffer.from(e.caPem).toString('base64');
  const webhook = (
    name: string,
    path: string,
    resource: string,
    operations: string[],
    group = { apiGroups: ['virtualization.deckhouse.io'], apiVersions: ['v1alpha2'] },
  ) => ({
    name,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    failurePolicy: 'Fail',
    timeoutSeconds: 10,
    matchPolicy: 'Equivalent',
    clientConfig: { url: `https://127.0.0.1:${e.validatePort}${path}`, caBundle },
    rules: [
      {
        ...group,
        operations,
        resources: [resource],
        scope: 'Namespaced',
      },
    ],
  });
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'vmpool-local' },
      webhooks: [
        webhook('vmpool.local.vmpool.io', POOL_PATH, 'virtualmachinepools', ['CREATE', 'UPDATE']),
        webhook('vmpool-scale.local.vmpool.io', SCALE_PATH, 'virtualmachinepools/scale', [
          'UPDATE',
        ]),
        webhook(
          'vmpool-claim.local.vmpool.io',
          CLAIM_PATH,
          'virtualmachineclaims',
          ['CREATE', 'UPDATE'],
          { apiGroups: [CLAIM_GROUP], apiVersions: [CLAIM_VERSION] },
        ),
      ],
    },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: e.namespace } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: SCALE_DOWN_SERVICE, namespace: e.namespace },
      spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ port: e.scaleDownPort }] },
    },
    {
      apiVersion: 'apiregistration.k8s.io/v1',
      kind: 'APIService',
      metadata: { name: apiServiceName(e.group) },
      spec: {
        group: e.group,
        version: VERSION,
        groupPriorityMinimum: 1000,
        versionPriority: 15,
        // Said explicitly so a taken-over registration cannot keep another writer's `true`, which
        // the API server refuses together with a caBundle.
        insecureSkipTLSVerify: false,
        caBundle,
        service: { name: SCALE_DOWN_SERVICE, namespace: e.namespace, port: e.scaleDownPort },
      },
    },
  ];
}
