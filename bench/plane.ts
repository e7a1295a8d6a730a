/**
 * The benchmark's control plane: the test harness's etcd + kube-apiserver + kube-controller-manager,
 * plus a second kube-controller-manager running only the ReplicaSet controller with its client rate
 * limit raised, as the yardstick of scale-up and replacement.
 * @module
 */
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ensureBinaries } from '../local/controlplane/binaries.js';
import { startControlPlane } from '../local/controlplane/cluster.js';
import type { ControlPlane } from '../local/controlplane/cluster.js';
import { startProcess, stopPid, tail, waitFor } from '../local/controlplane/process.js';

/** Flags of the ReplicaSet controller manager, printed with the results. */
export const REPLICASET_KCM_FLAGS = [
  '--controllers=replicaset-controller',
  // Defaults are 20 QPS / burst 30; raised so the client rate limiter is not what we measure.
  '--kube-api-qps=1000',
  '--kube-api-burst=1000',
  '--concurrent-replicaset-syncs=5',
  '--leader-elect=false',
  '--secure-port=0',
  '--use-service-account-credentials=false',
] as const;

/** A running benchmark plane. */
export interface BenchPlane {
  readonly cp: ControlPlane;
  readonly kc: KubeConfig;
  readonly knativeBinDir: string;
  /** PIDs of the control plane's processes now: etcd, kube-apiserver, both controller managers. */
  planePids(): number[];
  stop(): Promise<void>;
}

/** Starts the plane and the ReplicaSet controller manager. */
export async function startBenchPlane(log: (l: string) => void): Promise<BenchPlane> {
  const binDir = await ensureBinaries('k8s');
  const knativeBinDir = await ensureBinaries('knative');
  const cp = await startControlPlane({ binDir, log });
  const rs = startProcess({
    name: 'kcm-replicaset',
    bin: join(binDir, 'kube-controller-manager'),
    logPath: join(cp.dir, 'kcm-replicaset.log'),
    args: [`--kubeconfig=${cp.kubeconfigPath}`, ...REPLICASET_KCM_FLAGS],
  });
  try {
    await waitFor(
      'the ReplicaSet controller to start',
      () =>
        Promise.resolve(
          /replicaset/i.test(tail(rs.logPath, 400)) &&
            /[Ss]ynced|Started/.test(tail(rs.logPath, 400)),
        ),
      { timeoutMs: 60_000, proc: rs, intervalMs: 100 },
    );
  } catch (err) {
    await stopPid(rs.pid);
    await cp.stop();
    throw err;
  }
  log('ReplicaSet controller manager running');
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  return {
    cp,
    kc,
    knativeBinDir,
    planePids: () => [...Object.values(cp.pids), rs.pid],
    stop: async () => {
      await stopPid(rs.pid);
      await cp.stop();
    },
  };
}
