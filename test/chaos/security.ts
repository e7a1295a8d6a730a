/**
 * Security review as tests: least-privilege RBAC per ServiceAccount (the rendered knative/base
 * against an allow-list derived from the code's API calls), and the TLS floor of the functions'
 * HTTPS servers. (No-secret-in-logs is checked on the fault-injection run, where errors abound.)
 * @module
 */
import { execFile } from 'node:child_process';
import { connect } from 'node:tls';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../local/controlplane/binaries.js';
import { servingCert } from '../e2e/harness.js';
import { serveApp } from '../../shared/http/index.js';

const NS = 'vmpool-system';
const VM = 'virtualization.deckhouse.io';
const CLAIMS = 'vmpool.virtualization.deckhouse.io';

/**
 * What each identity's code calls (shared/kube/client.ts, as used by shared/reconcile and the
 * functions), as `group/resource:verb`. Anything granted beyond this is a violation.
 */
export const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  // reconcilePool: getPool, listPools (resync), updatePoolStatus, updatePool (dropTargets), getVm
  // (Reference-mode scope), listVms, createVm, updateVm, deleteVm, listDisks, createDisk, updateDisk
  // (claim, free-since, grow), deleteDisk, recordEvent.
  'reconcile-pool': [
    `${VM}/virtualmachinepools:get`,
    `${VM}/virtualmachinepools:list`,
    `${VM}/virtualmachinepools:update`,
    `${VM}/virtualmachinepools/status:update`,
    `${VM}/virtualmachines:get`,
    `${VM}/virtualmachines:list`,
    `${VM}/virtualmachines:create`,
    `${VM}/virtualmachines:update`,
    `${VM}/virtualmachines:delete`,
    `${VM}/virtualdisks:list`,
    `${VM}/virtualdisks:create`,
    `${VM}/virtualdisks:update`,
    `${VM}/virtualdisks:delete`,
    'events.k8s.io/events:create',
    // blockOwnerDeletion on the ownerReferences of new VMs and disks (OwnerReferencesPermissionEnforcement).
    `${VM}/virtualmachinepools/finalizers:update`,
    `${VM}/virtualmachines/finalizers:update`,
    // listClaims (a pool's namespace, every namespace on the resync tick), updateClaimStatus.
    `${CLAIMS}/virtualmachineclaims:list`,
    `${CLAIMS}/virtualmachineclaims/status:update`,
  ],
  // collectDisks: listDisks, listPools, listVms, deleteDisk.
  'disk-gc-tick': [
    `${VM}/virtualmachinepools:list`,
    `${VM}/virtualmachines:list`,
    `${VM}/virtualdisks:list`,
    `${VM}/virtualdisks:delete`,
    'events.k8s.io/events:create',
  ],
  // review: getPool (/scale), dryRunCreateVm (a dry-run create needs create).
  // get: the VMs an added scaledownwith target names (Explicit cannot be forged).
  'scale-validate': [
    `${VM}/virtualmachinepools:get`,
    `${VM}/virtualmachines:create`,
    `${VM}/virtualmachines:get`,
  ],
  // scaleDownWith: getPool, getVm, updatePool; poolVictims: getPool, listVms; subjectAccessReview;
  // getConfigMapData (front proxy), through the built-in extension-apiserver-authentication-reader
  // Role.
  'scale-down-with': [
    `${VM}/virtualmachinepools:get`,
    `${VM}/virtualmachinepools:update`,
    `${VM}/virtualmachines:get`,
    `${VM}/virtualmachines:list`,
    'authorization.k8s.io/subjectaccessreviews:create',
    // Not tokenreviews: the base leaves the CloudEvent form off, and its component grants that.
    'kube-system:/configmaps[extension-apiserver-authentication]:get',
    'kube-system:/configmaps[extension-apiserver-authentication]:list',
    'kube-system:/configmaps[extension-apiserver-authentication]:watch',
  ],
  // The ApiServerSource adapters list and watch what they deliver.
  'vmpool-source-adapter': [
    `${VM}/virtualmachinepools:get`,
    `${VM}/virtualmachinepools:list`,
    `${VM}/virtualmachinepools:watch`,
    `${VM}/virtualmachines:get`,
    `${VM}/virtualmachines:list`,
    `${VM}/virtualmachines:watch`,
    `${VM}/virtualdisks:get`,
    `${VM}/virtualdisks:list`,
    `${VM}/virtualdisks:watch`,
    `${CLAIMS}/virtualmachineclaims:get`,
    `${CLAIMS}/virtualmachineclaims:list`,
    `${CLAIMS}/virtualmachineclaims:watch`,
  ],
};

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs?: string[];
  nonResourceURLs?: string[];
}
interface Doc {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  rules?: Rule[];
  roleRef?: { kind: string; name: string };
  subjects?: Array<{ kind: string; name: string; namespace?: string }>;
}

/** Roles Kubernetes ships that the manifests bind to (as the API server bootstraps them). */
const BUILTIN_ROLES: Readonly<Record<string, Rule[]>> = {
  'kube-system/Role/extension-apiserver-authentication-reader': [
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: ['extension-apiserver-authentication'],
      verbs: ['get', 'list', 'watch'],
    },
  ],
};

/** Renders knative/base with kubectl kustomize. */
export async function renderBase(): Promise<Doc[]> {
  const kubectl = join(inject('cluster').binDir, 'kubectl');
  const { stdout } = await promisify(execFile)(
    kubectl,
    ['kustomize', join(REPO_ROOT, 'knative', 'base')],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  return parseAllDocuments(stdout).map((d) => d.toJSON() as Doc);
}

/** Each ServiceAccount's effective grants, as `[ns:]group/resource[names]:verb`. */
export function effectiveGrants(docs: readonly Doc[]): Map<string, Set<string>> {
  const roles = new Map<string, Rule[]>(Object.entries(BUILTIN_ROLES));
  for (const d of docs)
    if (d.kind === 'ClusterRole') roles.set(`ClusterRole/${d.metadata?.name ?? ''}`, d.rules ?? []);
    else if (d.kind === 'Role')
      roles.set(`${d.metadata?.namespace ?? ''}/Role/${d.metadata?.name ?? ''}`, d.rules ?? []);
  const out = new Map<string, Set<string>>();
  for (const d of docs) {
    if (d.kind === 'ServiceAccount' && d.metadata?.namespace === NS)
      out.set(d.metadata.name ?? '', out.get(d.metadata.name ?? '') ?? new Set());
  }
  for (const d of docs) {
    if (d.kind !== 'ClusterRoleBinding' && d.kind !== 'RoleBinding') continue;
    const scope = d.kind === 'RoleBinding' ? `${d.metadata?.namespace ?? ''}:` : '';
    const ref = d.roleRef;
    if (ref === undefined) continue;
    const key =
      ref.kind === 'ClusterRole'
        ? `ClusterRole/${ref.name}`
        : `${d.metadata?.namespace ?? ''}/Role/${ref.name}`;
    const rules = roles.get(key);
    for (const s of d.subjects ?? []) {
      if (s.kind !== 'ServiceAccount' || s.namespace !== NS) continue;
      const set = out.get(s.name) ?? new Set<string>();
      out.set(s.name, set);
      if (rules === undefined) {
        set.add(`unknown role ${key}`);
        continue;
      }
      for (const r of rules) {
        for (const url of r.nonResourceURLs ?? [])
          for (const v of r.verbs ?? []) set.add(`${url}:${v}`);
        for (const g of r.apiGroups ?? [])
          for (const res of r.resources ?? [])
            for (const v of r.verbs ?? []) {
              const names = r.resourceNames?.length ? `[${r.resourceNames.join(',')}]` : '';
              set.add(`${scope}${g}/${res}${names}:${v}`);
            }
      }
    }
  }
  return out;
}

/** Grants beyond the allow-list, per ServiceAccount (an unknown ServiceAccount is all extra). */
export function extraGrants(granted: Map<string, Set<string>>): string[] {
  const out: string[] = [];
  for (const [sa, set] of granted) {
    const allowed = new Set(ALLOWED[sa] ?? []);
    for (const g of [...set].sort()) if (!allowed.has(g)) out.push(`${sa}: ${g}`);
  }
  return out;
}

/** Which TLS versions a function's HTTPS server accepts. */
export async function tlsVersions(): Promise<Record<string, boolean>> {
  const { cert, caPem } = servingCert('tls-probe', NS);
  const served = serveApp(
    { fetch: () => new Response('ok') },
    {
      port: 0,
      hostname: '127.0.0.1',
      handleSignals: false,
      tls: { certFile: cert.certPath, keyFile: cert.keyPath },
    },
  );
  const { port } = await served.listening;
  const probe = (v: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'): Promise<boolean> =>
    new Promise((resolve) => {
      const s = connect({
        host: '127.0.0.1',
        port,
        ca: caPem,
        servername: 'localhost',
        minVersion: v,
        maxVersion: v,
        // Old protocols need a lower OpenSSL security level on the client to be attempted at all.
        ciphers: 'DEFAULT:@SECLEVEL=0',
      });
      s.once('secureConnect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => {
        resolve(false);
      });
    });
  try {
    return {
      'TLSv1.0': await probe('TLSv1'),
      'TLSv1.1': await probe('TLSv1.1'),
      'TLSv1.2': await probe('TLSv1.2'),
      'TLSv1.3': await probe('TLSv1.3'),
    };
  } finally {
    await served.close();
  }
}
