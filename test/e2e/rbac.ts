/**
 * The shipped RBAC, live: knative/base rendered with the built kubectl (`kubectl kustomize`), its
 * ServiceAccounts and roles applied to a test plane, and a KubeConfig per function with a token of
 * its own ServiceAccount (TokenRequest, through `kubectl create token`), so every function under test
 * runs with exactly the grants a cluster would give it, never as admin.
 * @module
 */
import { KubeConfig } from '@kubernetes/client-node';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { runKubectl, toYaml } from '../../local/controlplane/kubectl.js';
import { kubeConfigFor } from '../../shared/kube/index.js';

/** Namespace of the functions' ServiceAccounts in knative/base. */
export const SYSTEM_NAMESPACE = 'vmpool-system';

/** The four functions, by ServiceAccount name. */
export type FunctionName = 'reconcile-pool' | 'disk-gc-tick' | 'scale-validate' | 'scale-down-with';

/** A rendered object, as far as this module reads it. */
export interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: Array<Record<string, unknown>>;
  [k: string]: unknown;
}

const RBAC_KINDS = new Set([
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
]);

/** A plane to run kubectl against: the bin directory and an admin kubeconfig. */
export interface PlaneAccess {
  readonly binDir: string;
  readonly kubeconfigPath: string;
}

function kubectl(p: PlaneAccess, args: string[], input?: string): Promise<string> {
  return runKubectl(join(p.binDir, 'kubectl'), p.kubeconfigPath, args, input);
}

/** knative/base rendered by the built kubectl, every object. */
export async function renderBase(binDir: string): Promise<Rendered[]> {
  // kustomize reads only local files, but kubectl wants a kubeconfig path; any readable one does.
  const text = await runKubectl(join(binDir, 'kubectl'), '/dev/null', [
    'kustomize',
    join(REPO_ROOT, 'knative', 'base'),
  ]);
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as Rendered | null)
    .filter((o): o is Rendered => o !== null);
}

/** Only the identities and grants of the rendered base (and their namespace). */
export function rbacOf(objects: readonly Rendered[]): Rendered[] {
  return objects.filter(
    (o) =>
      RBAC_KINDS.has(o.kind) || (o.kind === 'Namespace' && o.metadata.name === SYSTEM_NAMESPACE),
  );
}

/** Applies the rendered RBAC of knative/base to a plane (server-side, idempotent). */
export async function installFunctionRbac(p: PlaneAccess): Promise<void> {
  const objects = rbacOf(await renderBase(p.binDir));
  const namespaces = objects.filter((o) => o.kind === 'Namespace');
  // The namespace first: the ServiceAccounts in it are refused until it exists.
  await kubectl(p, ['apply', '--server-side', '-f', '-'], toYaml(namespaces));
  await kubectl(
    p,
    ['apply', '--server-side', '-f', '-'],
    toYaml(objects.filter((o) => o.kind !== 'Namespace')),
  );
}

/** A KubeConfig that authenticates as `system:serviceaccount:<namespace>:<sa>` with a fresh token. */
export async function serviceAccountKubeConfig(
  p: PlaneAccess,
  sa: string,
  namespace = SYSTEM_NAMESPACE,
): Promise<KubeConfig> {
  const token = (
    await kubectl(p, ['create', 'token', sa, '-n', namespace, '--duration=4h'])
  ).trim();
  const admin = new KubeConfig();
  admin.loadFromFile(p.kubeconfigPath);
  const c = admin.getCurrentCluster();
  if (c?.caData === undefined)
    throw new Error(`${p.kubeconfigPath}: no certificate-authority-data`);
  return kubeConfigFor({
    server: c.server,
    token,
    caData: Buffer.from(c.caData, 'base64').toString('utf8'),
  });
}
