/**
 * One real control plane per e2e run. Builds the binaries if they are missing (never skips: a
 * missing toolchain must fail the run), starts the plane, and provides its coordinates to tests.
 * @module
 */
import type { TestProject } from 'vitest/node';
import { ensureBinaries } from '../../local/controlplane/binaries.js';
import { startControlPlane } from '../../local/controlplane/cluster.js';
import { platformCrdDir } from '../../local/controlplane/crds.js';
import { installFunctionRbac } from './rbac.js';

/** What tests get through `inject('cluster')`. */
export interface ClusterInfo {
  kubeconfigPath: string;
  server: string;
  binDir: string;
  knativeBinDir: string;
  /** PKI directory and webhook CA (for minting serving certs in tests). */
  pkiDir: string;
  webhookCaCert: string;
  webhookCaKey: string;
  /** Directory the VM/VD/VI/CVI CRDs came from (fixtures or VMPOOL_DVP_CRDS). */
  platformCrdDir: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: ClusterInfo;
  }
}

/** Starts the plane (and builds what is missing); returns the teardown. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const log = (l: string) => {
    console.error(`[e2e] ${l}`);
  };
  const binDir = await ensureBinaries('k8s');
  const knativeBinDir = await ensureBinaries('knative');
  const t0 = Date.now();
  const cp = await startControlPlane({ binDir, log });
  log(`control plane up in ${Date.now() - t0} ms (CRDs from ${platformCrdDir()})`);
  // The functions under test run as their own ServiceAccounts, bound by the shipped RBAC.
  const t1 = Date.now();
  await installFunctionRbac({ binDir, kubeconfigPath: cp.kubeconfigPath });
  log(`knative/base RBAC applied in ${Date.now() - t1} ms`);
  project.provide('cluster', {
    kubeconfigPath: cp.kubeconfigPath,
    server: cp.server,
    binDir,
    knativeBinDir,
    pkiDir: cp.certs.dir,
    webhookCaCert: cp.certs.webhookCa.certPath,
    webhookCaKey: cp.certs.webhookCa.keyPath,
    platformCrdDir: platformCrdDir(),
  });
  return async () => {
    // Reported so the cost of the harness stays visible in CI logs.
    const mem = cp.memory();
    const total = Object.values(mem).reduce((a, m) => a + m.peakMiB, 0);
    log(`peak RSS MiB ${JSON.stringify(mem)} (sum of peaks ${total})`);
    await cp.stop();
  };
}
