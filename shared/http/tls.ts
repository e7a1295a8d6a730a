/**
 * TLS material from files, reloaded when it changes, and the client certificate of a request.
 * @module
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { TLSSocket } from 'node:tls';
import type { PeerCertificate, SecureContextOptions } from 'node:tls';
import type { Context } from 'hono';
import type { NodeEnv } from './env.js';

/** Where the serving certificate lives (a mounted Secret, usually). */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** CA bundle that client certificates are checked against (sets `authorized`). */
  readonly caFile?: string;
  /**
   * Ask for (but do not require) a client certificate: the aggregated API needs the front-proxy's,
   * while health probes come without one.
   */
  readonly requestCert?: boolean;
}

/** The key, certificate and CA read from {@link TlsFiles}. */
export interface TlsMaterial {
  readonly key: Buffer;
  readonly cert: Buffer;
  readonly ca?: Buffer;
}

/** Reads the files now. */
export function readTls(files: TlsFiles): TlsMaterial {
  const key = readFileSync(files.keyFile);
  const cert = readFileSync(files.certFile);
  return files.caFile === undefined ? { key, cert } : { key, cert, ca: readFileSync(files.caFile) };
}

/** True when two readings differ (a rotation happened). */
export function tlsChanged(a: TlsMaterial, b: TlsMaterial): boolean {
  return (
    !a.key.equals(b.key) ||
    !a.cert.equals(b.cert) ||
    !(a.ca ?? Buffer.alloc(0)).equals(b.ca ?? Buffer.alloc(0))
  );
}

/** Options for `https.createServer` / `setSecureContext`. */
export function secureContextOptions(m: TlsMaterial): SecureContextOptions {
  return m.ca === undefined ? { key: m.key, cert: m.cert } : { key: m.key, cert: m.cert, ca: m.ca };
}

/** The client certificate a request was made with. */
export interface ClientCertificate {
  /** The chain verified against the server's CA bundle (`caFile`). */
  readonly authorized: boolean;
  readonly authorizationError?: string;
  /** Leaf first, as the client presented it. */
  readonly chain: readonly X509Certificate[];
}

function chainOf(
  peer: PeerCertificate & { issuerCertificate?: PeerCertificate },
): X509Certificate[] {
  const out: X509Certificate[] = [];
  const seen = new Set<string>();
  let cur: (PeerCertificate & { issuerCertificate?: PeerCertificate }) | undefined = peer;
  while (cur?.raw !== undefined && !seen.has(cur.fingerprint256)) {
    seen.add(cur.fingerprint256);
    out.push(new X509Certificate(cur.raw));
    cur = cur.issuerCertificate;
  }
  return out;
}

/**
 * The client certificate of this request, or `undefined` over plain HTTP or when none was sent.
 * Only meaningful with `requestCert`.
 */
export function clientCertificate(c: Context<NodeEnv>): ClientCertificate | undefined {
  const socket = c.env.incoming.socket;
  if (!(socket instanceof TLSSocket)) return undefined;
  const peer = socket.getPeerCertificate(true);
  if (Object.keys(peer).length === 0) return undefined;
  const err = socket.authorizationError as Error | string | null | undefined;
  const base = { authorized: socket.authorized, chain: chainOf(peer) };
  if (err === null || err === undefined) return base;
  return { ...base, authorizationError: typeof err === 'string' ? err : err.message };
}

/**
 * True when `leaf` was issued and signed by one of the certificates in `caPem` and is valid now.
 * The front-proxy CA arrives at runtime (extension-apiserver-authentication ConfigMap), so it cannot
 * always be the server's own `ca`.
 */
export function signedBy(leaf: X509Certificate, caPem: string, now: Date = new Date()): boolean {
  if (now < new Date(leaf.validFrom) || now > new Date(leaf.validTo)) return false;
  const blocks = caPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.some((pem) => {
    const ca = new X509Certificate(pem);
    return leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
  });
}
