/**
 * Test certificates (minted by the control plane's PKI helpers): a front-proxy CA, client certificates it signs, and
 * a rogue CA whose client certificate must not be trusted.
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mintCa, mintLeaf, type KeyPair } from '../../local/controlplane/certs.js';

/** PEM certificates of one test run. */
export interface TestCerts {
  /** The front-proxy CA, as kube-system's ConfigMap publishes it. */
  readonly caPem: string;
  /** CN=front-proxy-client, signed by the CA. */
  readonly proxyPem: string;
  /** CN=intruder, signed by the same CA but not an allowed name. */
  readonly intruderPem: string;
  /** CN=front-proxy-client, signed by a different CA. */
  readonly roguePem: string;
  /** That other CA (it stands in for a rotated front-proxy CA too). */
  readonly rogueCaPem: string;
  /** CN=front-proxy-client, signed by the CA, but for server authentication only. */
  readonly serverUsagePem: string;
  /** The private key of `proxyPem`, for tests that present it over a real TLS connection. */
  readonly proxyKeyPem: string;
  /** A serving certificate for 127.0.0.1 and its key (signed by the CA). */
  readonly servingPem: string;
  readonly servingKeyPem: string;
}

/** Mints a fresh set in a temporary directory (removed afterwards). */
export function mintCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'vmpool-certs-'));
  try {
    const ca = mintCa(dir, 'front-proxy-ca', 'front-proxy-ca');
    const rogue = mintCa(dir, 'rogue-ca', 'rogue-ca');
    const client = (name: string, signer: KeyPair, cn: string): string =>
      mintLeaf(dir, name, signer, { cn, usage: 'client' }).certPem;
    const proxy = mintLeaf(dir, 'proxy', ca, { cn: 'front-proxy-client', usage: 'client' });
    const serving = mintLeaf(dir, 'serving', ca, {
      cn: 'localhost',
      sans: ['127.0.0.1', 'localhost'],
      usage: 'server',
    });
    return {
      caPem: ca.certPem,
      proxyPem: proxy.certPem,
      proxyKeyPem: proxy.keyPem,
      intruderPem: client('intruder', ca, 'intruder'),
      roguePem: client('rogue', rogue, 'front-proxy-client'),
      rogueCaPem: rogue.certPem,
      serverUsagePem: mintLeaf(dir, 'server-usage', ca, {
        cn: 'front-proxy-client',
        usage: 'server',
      }).certPem,
      servingPem: serving.certPem,
      servingKeyPem: serving.keyPem,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
