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
}

/** Mints a fresh set in a temporary directory (removed afterwards). */
export function mintCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'vmpool-certs-'));
  try {
    const ca = mintCa(dir, 'front-proxy-ca', 'front-proxy-ca');
    const rogue = mintCa(dir, 'rogue-ca', 'rogue-ca');
    const client = (name: string, signer: KeyPair, cn: string): string =>
      mintLeaf(dir, name, signer, { cn, usage: 'client' }).certPem;
    return {
      caPem: ca.certPem,
      proxyPem: client('proxy', ca, 'front-proxy-client'),
      intruderPem: client('intruder', ca, 'intruder'),
      roguePem: client('rogue', rogue, 'front-proxy-client'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
