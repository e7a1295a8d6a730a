/**
 * The shipped RBAC, live: knative/base rendered with the built kubectl (`kubectl kustomize`), its
 * ServiceAccounts and roles applied to a test plane, and a KubeConfig per function with a token of
 * its own ServiceAccount (TokenRequest, through `kubectl create token`), so every function under test
 * runs with exactly the grants a cluster would give it, never as admin.
 * @module
 */
import { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { runKubectl, toYaml } from '../../local/controlplane/kubectl.js';
import { kubeConfigFor } from '../../shared/kube/config.js';

/** Namespace of the functions' ServiceAccounts in knative/base. */
export const SYSTEM_NAMESPACE = 'vmpool-system';

/**
 * Where the e2e plane keeps them instead: other tests create and delete `vmpool-system` (the Knative
 * install is dry-run there), which would take the functions' identities with it.
 */
export const FUNCTIONS_NAMESPACE = 'vmpool-e2e-functions';

/** The name an installed copy of a cluster-scoped RBAC object of knative/base gets. */
export function e2eName(name: string): string {
  return `e2e:${name}`;
}

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

interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

/**
 * The same identities and grants, moved out of the way of other tests: ServiceAccounts (and the
 * namespace) in {@link FUNCTIONS_NAMESPACE}, cluster roles and bindings renamed with {@link e2eName}.
 * The rules are knative/base's, untouched.
 */
export function relocated(objects: readonly Rendered[]): Rendered[] {
  const ns = (n: string | undefined) => (n === SYSTEM_NAMESPACE ? FUNCTIONS_NAMESPACE : n);
  return objects.map((o) => {
    if (o.kind === 'Namespace')
      return { ...o, metadata: { ...o.metadata, name: FUNCTIONS_NAMESPACE } };
    if (o.kind === 'ServiceAccount')
      return { ...o, metadata: { ...o.metadata, namespace: FUNCTIONS_NAMESPACE } };
    const renamed = { ...o, metadata: { ...o.metadata, name: e2eName(o.metadata.name) } };
    if (o.kind === 'Role') return o;
    if (o.kind === 'ClusterRole') return renamed;
    const ref = o.roleRef as { kind: string; name: string; apiGroup: string };
    return {
      ...renamed,
      roleRef: ref.kind === 'ClusterRole' ? { ...ref, name: e2eName(ref.name) } : ref,
      subjects: (o.subjects as Subject[]).map((x) => ({ ...x, namespace: ns(x.namespace) })),
    };
  });
}

/**
 * The grants of the optional component knative/overlays/scaledownwith-events (the TokenReview right
 * of scale-down-with, which knative/base no longer gives), as a cluster with the component has them:
 * the chaos suite drives the CloudEvent form as scale-down-with's own ServiceAccount.
 */
export function eventsComponentRbac(): Rendered[] {
  const file = join(REPO_ROOT, 'knative', 'overlays', 'scaledownwith-events', 'events.yaml');
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJSON() as Rendered | null)
    .filter((o): o is Rendered => o !== null && RBAC_KINDS.has(o.kind));
}

/**
 * Applies the rendered RBAC of knative/base, and the events component's ({@link
 * eventsComponentRbac}), to a plane, {@link relocated} (server-side, idempotent).
 */
export async function installFunctionRbac(p: PlaneAccess): Promise<void> {
  const objects = relocated([...rbacOf(await renderBase(p.binDir)), ...eventsComponentRbac()]);
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
  namespace = FUNCTIONS_NAMESPACE,
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
