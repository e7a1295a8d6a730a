/**
 * Identities of their own for the functions `npm start` runs in one process: each acts as the
 * ServiceAccount name it has in a cluster (`system:serviceaccount:<namespace>:<function>`), by
 * impersonation through the operator's kubeconfig. So what the API server and the webhook see of a
 * write (who made it) is what they see in a cluster: a pool write by the operator's kubectl is not
 * one by scale-down-with, and adding scaledownwith targets by hand is refused locally too.
 * @module
 */
import type { Credentials } from '../shared/kube/transport.js';

/** The username the API server gives a ServiceAccount. */
export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/**
 * The groups an impersonated function is given: those of a ServiceAccount, and `system:masters`
 * because `npm start` installs no RBAC of its own (the functions had the operator's rights before);
 * the grants of a cluster are knative/base/rbac.yaml's, proven by test/e2e/rbac.test.ts.
 */
export function impersonatedGroups(namespace: string): string[] {
  return ['system:masters', 'system:serviceaccounts', `system:serviceaccounts:${namespace}`];
}

const isList = (h: unknown): h is readonly string[] => Array.isArray(h);

/**
 * `creds` acting as `user` in `groups` (the Impersonate-User and Impersonate-Group headers): the
 * kubeconfig's user must be allowed to impersonate them, as a local control plane's admin is.
 */
export function impersonating(
  creds: Credentials,
  user: string,
  groups: readonly string[],
): Credentials {
  return {
    getCurrentCluster: () => creds.getCurrentCluster(),
    applyToHTTPSOptions: async (opts) => {
      await creds.applyToHTTPSOptions(opts);
      const headers = opts.headers;
      // Headers may come as a flat list of names and values; each group is a header line of its own.
      opts.headers = isList(headers)
        ? [...headers, 'Impersonate-User', user, ...groups.flatMap((g) => ['Impersonate-Group', g])]
        : { ...headers, 'Impersonate-User': user, 'Impersonate-Group': [...groups] };
    },
  };
}
