/**
 * Who may call an endpoint that only the kube-apiserver should call (the admission webhook): a
 * client certificate signed by a CA bundle the operator names. The kube-apiserver presents one when
 * its admission configuration gives it a kubeconfig for webhooks (`--admission-control-config-file`,
 * a WebhookAdmissionConfiguration's `kubeConfigFile`); without that there is nothing to check, so
 * the check is opt-in and off by default.
 * @module
 */
import { readFileSync } from 'node:fs';
import type { Context, MiddlewareHandler } from 'hono';
import type { NodeEnv } from './env.js';
import { commonName, validForClientAuth } from './frontproxy.js';
import { errorResponse } from './responses.js';
import type { ClientCertificate } from './tls.js';
import { signedBy } from './tls.js';

/** Settings of {@link requireClientCertificate}. */
export interface ClientCaOptions {
  /** The PEM bundle of the accepted CAs, now; undefined when it cannot be read (then: refuse). */
  readonly ca: () => string | undefined;
  /** The client certificate of a request (the TLS socket's, unless a test supplies one). */
  readonly clientCert: (c: Context<NodeEnv>) => ClientCertificate | undefined;
  readonly now: () => Date;
  /** The common names accepted; empty or absent: any name the CA signed. */
  readonly names?: readonly string[];
}

/** Why a client certificate is not accepted, or undefined when it is. */
export function refuseClient(
  cert: ClientCertificate | undefined,
  caPem: string,
  names: readonly string[],
  now: Date,
): string | undefined {
  const leaf = cert?.chain[0];
  if (leaf === undefined) return 'a client certificate is required';
  if (!signedBy(leaf, caPem, now))
    return 'the client certificate is not signed by the accepted client CA';
  if (!validForClientAuth(leaf))
    return 'the client certificate is not valid for client authentication';
  const cn = commonName(leaf);
  if (names.length > 0 && (cn === undefined || !names.includes(cn)))
    return `client certificate name "${cn ?? ''}" is not accepted`;
  return undefined;
}

/**
 * Middleware that lets a request on only with an accepted client certificate: 401 otherwise, 503
 * when the CA bundle cannot be read (fail closed: the API server's failurePolicy decides then).
 */
export function requireClientCertificate(opts: ClientCaOptions): MiddlewareHandler<NodeEnv> {
  return async function clientCertificateCheck(c, next) {
    const ca = opts.ca();
    if (ca === undefined) return errorResponse(503, 'cannot read the client CA bundle');
    const refused = refuseClient(opts.clientCert(c), ca, opts.names ?? [], opts.now());
    if (refused !== undefined) return errorResponse(401, refused);
    await next();
    return undefined;
  };
}

/**
 * A CA bundle read from a file (a mounted Secret or ConfigMap), re-read at most every `ttlMs` so a
 * rotation is picked up; the last good reading is kept while a re-read fails.
 */
export function caFile(
  path: string,
  ttlMs = 10_000,
  now = () => Date.now(),
): () => string | undefined {
  let pem: string | undefined;
  let at = Number.NEGATIVE_INFINITY;
  return () => {
    if (now() - at < ttlMs) return pem;
    at = now();
    try {
      pem = readFileSync(path, 'utf8');
    } catch {
      // Keep the last good bundle; with none, every call is refused.
    }
    return pem;
  };
}
