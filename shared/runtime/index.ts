/**
 * The process shell shared by every function: logger, metrics, the Kube funnel from the environment,
 * and serving (HTTPS when certificate files are configured).
 * @module
 */
import type { Hono } from 'hono';
import type { FunctionMetrics, Health, Logger, NodeEnv, ServedApp } from '../http/index.js';
import { createFunctionMetrics, createHealth, createLogger, serveApp } from '../http/index.js';
import type { Kube } from '../kube/index.js';
import { createKube, loadKubeConfig } from '../kube/index.js';

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
 * KUBECONFIG or in-cluster credentials. Returns the served app (SIGTERM drains it).
 */
export function runFunction(
  name: string,
  build: (deps: FunctionDeps) => Hono<NodeEnv>,
  env: RuntimeEnv = process.env,
): ServedApp {
  const log = createLogger(name);
  const metrics = createFunctionMetrics();
  const kube = createKube(loadKubeConfig(), {
    onRequest: (verb, outcome, seconds) => {
      metrics.onApiRequest(verb, outcome, seconds);
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
  const served = serveApp(app, { port, log, health, ...(tls ? { tls } : {}) });
  void served.listening.then((a) => {
    log.info({ port: a.port, https: tls !== undefined }, `${name} listening`);
  });
  return served;
}
