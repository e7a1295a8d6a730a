/**
 * The objects that make the kube-apiserver call this process: the ValidatingWebhookConfiguration
 * (by URL on 127.0.0.1) and the APIService (through an ExternalName Service to localhost, since no
 * kube-proxy runs).
 * @module
 */
import { SUBRESOURCES_GROUP, VERSION } from '../shared/api/index.js';
import { POOL_PATH, SCALE_PATH } from '../functions/scale-validate/app.js';

/** Where the local HTTPS functions listen, and the CA that signed their certificate. */
export interface LocalEndpoints {
  readonly validatePort: number;
  readonly scaleDownPort: number;
  readonly caPem: string;
  /** Namespace of the ExternalName Service. */
  readonly namespace: string;
}

/** Name of the Service the APIService points at (and the certificate's `<svc>.<ns>.svc`). */
export const SCALE_DOWN_SERVICE = 'scale-down-with';

/** The webhook configuration, the Service and the APIService for `npm start`. */
export function wiring(e: LocalEndpoints): object[] {
  const caBundle = Buffer.from(e.caPem).toString('base64');
  const webhook = (name: string, path: string, resource: string, operations: string[]) => ({
    name,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    failurePolicy: 'Fail',
    timeoutSeconds: 10,
    matchPolicy: 'Equivalent',
    clientConfig: { url: `https://127.0.0.1:${e.validatePort}${path}`, caBundle },
    rules: [
      {
        apiGroups: ['virtualization.deckhouse.io'],
        apiVersions: ['v1alpha2'],
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
      metadata: { name: `${VERSION}.${SUBRESOURCES_GROUP}` },
      spec: {
        group: SUBRESOURCES_GROUP,
        version: VERSION,
        groupPriorityMinimum: 1000,
        versionPriority: 15,
        caBundle,
        service: { name: SCALE_DOWN_SERVICE, namespace: e.namespace, port: e.scaleDownPort },
      },
    },
  ];
}
