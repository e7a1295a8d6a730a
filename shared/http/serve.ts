/**
 * Serving a Hono app over HTTP or HTTPS, with certificate reload and graceful shutdown.
 * @module
 */
import { X509Certificate } from 'node:crypto';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { ServerType } from '@hono/node-server';
import type { Health } from './health.js';
import type { Logger } from './log.js';
import { readTls, secureContextOptions, tlsChanged } from './tls.js';
import type { TlsFiles, TlsMaterial } from './tls.js';

/** How long an idle client connection stays open: longer than Go's HTTP client keeps one (90 s). */
export const KEEP_ALIVE_MS = 120_000;

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
  /** The clock readiness judges the certificate's validity by (tests move it). */
  readonly now?: () => Date;
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
  const now = opts.now ?? (() => new Date());
  // A missing or unreadable certificate (a Secret not issued yet) does not stop the process: it
  // serves no TLS handshake and is not ready until a reload finds the files.
  let material: TlsMaterial | undefined;
  if (opts.tls !== undefined)
    try {
      material = readTls(opts.tls);
    } catch (err) {
      log?.warn({ err }, 'no serving certificate yet; not ready until one is loaded');
    }
  let validTo: number | undefined;
  let validFrom: number | undefined;
  const noteValidity = (m: TlsMaterial | undefined): void => {
    if (m === undefined) return;
    try {
      const leaf = new X509Certificate(m.cert);
      validFrom = Date.parse(leaf.validFrom);
      validTo = Date.parse(leaf.validTo);
    } catch {
      validFrom = validTo = undefined;
    }
  };
  noteValidity(material);
  if (opts.tls !== undefined)
    health?.require(() => {
      if (material === undefined || validTo === undefined || validFrom === undefined)
        return 'no serving certificate loaded';
      const t = now().getTime();
      if (t > validTo) return 'the serving certificate has expired';
      if (t < validFrom) return 'the serving certificate is not valid yet';
      return undefined;
    });
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
    opts.tls === undefined
      ? serve(common, resolveListening)
      : serve(
          {
            ...common,
            createServer: createHttpsServer,
            serverOptions: {
              ...(material === undefined ? {} : secureContextOptions(material)),
              // Request, never require: probes and unauthenticated callers must still reach the
              // handler, which decides from the peer certificate.
              requestCert: opts.tls.requestCert ?? false,
              rejectUnauthorized: false,
            },
          },
          resolveListening,
        );

  // The kube-apiserver calls the webhook and the aggregated API through Go's HTTP client, which
  // keeps an idle connection for 90 s; Node closes one after 5 s. A request the apiserver sends on a
  // connection Node is closing at that moment is reset, and the kubectl apply or scaledownwith
  // behind it fails ("connection reset by peer", seen in an e2e run). Outlive the client's timeout.
  const http1 = server as HttpsServer;
  http1.keepAliveTimeout = KEEP_ALIVE_MS;
  http1.headersTimeout = KEEP_ALIVE_MS + 5_000;

  function reloadCertificates(): boolean {
    if (opts.tls === undefined) return false;
    try {
      const next = readTls(opts.tls);
      if (material !== undefined && !tlsChanged(material, next)) return false;
      (server as HttpsServer).setSecureContext(secureContextOptions(next));
      material = next;
      noteValidity(next);
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
