/**
 * Building a KubeConfig: from the environment in production, from options in tests.
 * @module
 */
import { KubeConfig } from '@kubernetes/client-node';

/**
 * The KubeConfig of the running process: `$KUBECONFIG` (merged), `~/.kube/config`, then the in-cluster
 * service account (whose token file is re-read, so projected-token rotation works).
 */
export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

/** Options of {@link kubeConfigFor}. */
export interface KubeConfigOptions {
  /** API server URL; client-node 1.x refuses `http://` unless `skipTLSVerify` (default `https://k8s.test`). */
  readonly server?: string;
  /** Bearer token (default `test-token`). */
  readonly token?: string;
  /** PEM CA of the API server; without it TLS verification is skipped. */
  readonly caData?: string;
  /** Default namespace of the context. */
  readonly namespace?: string;
}

/** A single-context KubeConfig, for tests (nock at `https://k8s.test`) and for explicit wiring. */
export function kubeConfigFor(opts: KubeConfigOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  const cluster = {
    name: 'vmpool',
    server: opts.server ?? 'https://k8s.test',
    skipTLSVerify: opts.caData === undefined,
    ...(opts.caData === undefined ? {} : { caData: Buffer.from(opts.caData).toString('base64') }),
  };
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'vmpool', token: opts.token ?? 'test-token' }],
    contexts: [
      {
        name: 'vmpool',
        cluster: 'vmpool',
        user: 'vmpool',
        ...(opts.namespace === undefined ? {} : { namespace: opts.namespace }),
      },
    ],
    currentContext: 'vmpool',
  });
  return kc;
}
