/**
 * Test certificates minted with the openssl CLI: a front-proxy CA, client certificates it signs, and
 * a rogue CA whose client certificate must not be trusted.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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

function openssl(dir: string, args: readonly string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

function selfSignedCa(dir: string, name: string): void {
  openssl(dir, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.crt`,
    '-subj',
    `/CN=${name}`,
    '-days',
    '2',
  ]);
}

function leaf(dir: string, ca: string, name: string, cn: string): string {
  openssl(dir, [
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${cn}`,
  ]);
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-out',
    `${name}.crt`,
    '-days',
    '1',
  ]);
  return readFileSync(join(dir, `${name}.crt`), 'utf8');
}

/** Mints a fresh set in a temporary directory (removed afterwards). */
export function mintCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'vmpool-certs-'));
  try {
    selfSignedCa(dir, 'front-proxy-ca');
    selfSignedCa(dir, 'rogue-ca');
    return {
      caPem: readFileSync(join(dir, 'front-proxy-ca.crt'), 'utf8'),
      proxyPem: leaf(dir, 'front-proxy-ca', 'proxy', 'front-proxy-client'),
      intruderPem: leaf(dir, 'front-proxy-ca', 'intruder', 'intruder'),
      roguePem: leaf(dir, 'rogue-ca', 'rogue', 'front-proxy-client'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
