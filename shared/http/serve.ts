/**
 * Serving a Hono app over HTTP or HTTPS, with certificate reload and graceful shutdown.
 * @module
 */
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { ServerType } from '@hono/node-server';
import type { Health } from './health.js';
import type { Logger } from './log.js';
import { readTls, secureContextOptions, tlsChanged } from './tls.js';
import type { TlsFiles, TlsMaterial } from './tls.js';

/** Options of {@link serveApp}. */
export interface ServeOptions {
  /** Port to listen on; 0 picks a free one (tests). */
  readonly port: number;
  readonly hostname?: string;
  /** Serve HTTPS from these files (reloaded on change); plain HTTP without. */
  readonly tls?: TlsFiles;
  readonly log?: Logger;
  /** Flipped to not-ready when shutdown begins. */
  readonly health?: Health;
  /** How often the TLS files are re-read (default 10 s); Secret updates swap symlinks, so poll. */
  readonly reloadIntervalMs?: number;
  /** After this long, open connections are cut (default 10 s). */
  readonly shutdownTimeoutMs?: number;
  /** Install SIGTERM/SIGINT handlers (default true). */
  readonly handleSignals?: boolean;
}

/** A running server. */
export interface ServedApp {
  readonly server: ServerType;
  /** Resolves once listening. */
  readonly listening: Promise<AddressInfo>;
  /** Re-reads the TLS files now; true when a new certificate was installed. */
  reloadCertificates(): boolean;
  /** Not-ready, stop accepting, drain, resolve when closed. Idempotent. */
  close(): Promise<void>;
}

/**
 * Serves `app` (anything with a fetch handler, such as a Hono app).
 *
 * @example
 * const served = serveApp(app, { port: 8443, tls: { certFile, keyFile, requestCert: true }, health, log });
 */
export function serveApp(
  app: { fetch: (request: Request, env: never) => Response | Promise<Response> },
  opts: ServeOptions,
): ServedApp {
  const { log, health } = opts;
  let material: TlsMaterial | undefined = opts.tls === undefined ? undefined : readTls(opts.tls);
  let resolveListening: (a: AddressInfo) => void = () => undefined;
  const listening = new Promise<AddressInfo>((resolve) => {
    resolveListening = resolve;
  });
  const fetch = app.fetch as (request: Request, env: unknown) => Response | Promise<Response>;
  const common = {
    fetch,
    port: opts.port,
    ...(opts.hostname === undefined ? {} : { hostname: opts.hostname }),
  };
  const server =
    material === undefined || opts.tls === undefined
      ? serve(common, resolveListening)
      : serve(
          {
            ...common,
            createServer: createHttpsServer,
            serverOptions: {
              ...secureContextOptions(material),
              // Request, never require: probes and unauthenticated callers must still reach the
              // handler, which decides from the peer certificate.
              requestCert: opts.tls.requestCert ?? false,
              rejectUnauthorized: false,
            },
          },
          resolveListening,
        );

  function reloadCertificates(): boolean {
    if (opts.tls === undefined || material === undefined) return false;
    try {
      const next = readTls(opts.tls);
      if (!tlsChanged(material, next)) return false;
      (server as HttpsServer).setSecureContext(secureContextOptions(next));
      material = next;
      log?.info('reloaded TLS certificate');
      return true;
    } catch (err) {
      // Mid-rotation the key and certificate may not match yet; keep serving the old pair.
      log?.warn({ err }, 'TLS reload failed; keeping the previous certificate');
      return false;
    }
  }

  const timer =
    opts.tls === undefined
      ? undefined
      : setInterval(reloadCertificates, opts.reloadIntervalMs ?? 10_000).unref();

  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    closing ??= new Promise<void>((resolve) => {
      health?.setReady(false);
      if (timer !== undefined) clearInterval(timer);
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      const force = setTimeout(() => {
        if ('closeAllConnections' in server) server.closeAllConnections();
      }, opts.shutdownTimeoutMs ?? 10_000).unref();
      server.close(() => {
        clearTimeout(force);
        log?.info('server closed');
        resolve();
      });
      if ('closeIdleConnections' in server) server.closeIdleConnections();
    });
    return closing;
  }

  function onSignal(signal: NodeJS.Signals): void {
    log?.info({ signal }, 'shutting down');
    void close();
  }

  if (opts.handleSignals ?? true) {
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }
  void listening.then((a) => log?.info({ port: a.port, tls: opts.tls !== undefined }, 'listening'));
  return { server, listening, reloadCertificates, close };
}
