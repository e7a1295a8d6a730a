/**
 * The process shell shared by every function: logger, metrics, the Kube funnel from the environment,
 * and serving (HTTPS when certificate files are configured).
 * @module
 */
import type { Hono } from 'hono';
import { startupSnapshot } from 'node:v8';
import type { NodeEnv } from '../http/env.js';
import { createHealth } from '../http/health.js';
import type { Health } from '../http/health.js';
import { createLogger, logMalformed } from '../http/log.js';
import type { Logger } from '../http/log.js';
import { createFunctionMetrics } from '../http/metrics.js';
import type { FunctionMetrics } from '../http/metrics.js';
import type { ServedApp } from '../http/serve.js';
import { createKube } from '../kube/client.js';
import { loadCredentials } from '../kube/credentials.js';
import type { Kube } from '../kube/types.js';
import type { Credentials } from '../kube/transport.js';

/** What a function's app factory receives. */
export interface FunctionDeps {
  readonly kube: Kube;
  readonly log: Logger;
  readonly metrics: FunctionMetrics;
  /** Readiness: the server adds its certificate to it. */
  readonly health: Health;
}

/** Environment of a function process. */
export interface RuntimeEnv {
  readonly PORT?: string;
  /** Serve HTTPS with these PEM files (reloaded when they change). */
  readonly TLS_CERT_FILE?: string;
  readonly TLS_KEY_FILE?: string;
  /** Ask HTTPS clients for a certificate (the aggregated API verifies the front proxy's). */
  readonly requestClientCert?: boolean;
}

/**
 * Starts a function: PORT (default 8080), HTTPS when TLS_CERT_FILE and TLS_KEY_FILE are set,
 * KUBECONFIG or in-cluster credentials. Resolves with the served app (SIGTERM drains it); without
 * usable credentials the process exits with 1.
 */
export async function runFunction(
  name: string,
  build: (deps: FunctionDeps) => Hono<NodeEnv>,
  env: RuntimeEnv = process.env,
): Promise<ServedApp> {
  const log = createLogger(name);
  let credentials: Credentials;
  try {
    credentials = await loadCredentials();
  } catch (err) {
    log.fatal({ err }, 'no usable credentials for the API server');
    process.exit(1);
  }
  const metrics = createFunctionMetrics();
  const kube = createKube(credentials, {
    onRequest: (verb, outcome, seconds) => {
      metrics.onApiRequest(verb, outcome, seconds);
    },
    onMalformed: (m) => {
      logMalformed(log, m);
    },
  });
  const health = createHealth();
  const app = build({ kube, log, metrics, health });
  const tls =
    env.TLS_CERT_FILE !== undefined && env.TLS_KEY_FILE !== undefined
      ? {
          certFile: env.TLS_CERT_FILE,
          keyFile: env.TLS_KEY_FILE,
          requestCert: env.requestClientCert === true,
        }
      : undefined;
  const port = Number(env.PORT ?? 8080);
  // Loaded here, not at module load: the HTTP server stack (and the web Request/Response globals it
  // captures) cannot be part of a V8 startup snapshot, which holds everything before this point.
  const { serveApp } = await import('../http/serve.js');
  const served = serveApp(app, { port, log, health, ...(tls ? { tls } : {}) });
  void served.listening.then((a) => {
    log.info({ port: a.port, https: tls !== undefined }, `${name} listening`);
  });
  return served;
}

/**
 * Runs a function's start now or, while `node --build-snapshot` evaluates its bundle
 * (scripts/snapshot.ts), when the snapshot is resumed: the start reads the environment and the
 * credentials of the process that runs, never those of the build, and both starts run one code.
 */
export function startFunction(start: () => unknown): void {
  if (startupSnapshot.isBuildingSnapshot()) startupSnapshot.setDeserializeMainFunction(start);
  else start();
}
