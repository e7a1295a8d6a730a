/**
 * Certificates of the test control plane, minted with Debian's `openssl` (node:crypto cannot issue
 * X.509 certificates, and an npm PKI library is not worth a dependency for a test harness).
 * @module
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WEBHOOK_CLIENT_CN } from './admission-config.js';

/** A PEM certificate and key on disk, plus the PEM text (for kubeconfigs and caBundles). */
export interface KeyPair {
  certPath: string;
  keyPath: string;
  certPem: string;
  keyPem: string;
}

/** Every certificate the control plane needs, under one directory. */
export interface ControlPlaneCerts {
  dir: string;
  servingCa: KeyPair;
  apiserver: KeyPair;
  clientCa: KeyPair;
  admin: KeyPair;
  frontProxyCa: KeyPair;
  frontProxyClient: KeyPair;
  /** Service-account signing key (private) and its public half. */
  serviceAccount: { keyPath: string; pubPath: string };
  /** CA for the project's own HTTPS endpoints (webhooks, aggregated API); its PEM is the caBundle. */
  webhookCa: KeyPair;
  /** CA of the client certificate kube-apiserver presents to webhooks (WEBHOOK_CLIENT_CA_FILE). */
  webhookClientCa: KeyPair;
  /** That certificate (admission-config.ts names it for every webhook). */
  webhookClient: KeyPair;
}

const DAYS = '7';

function openssl(args: string[], input?: string): string {
  return execFileSync('openssl', args, {
    input,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

// Random positive serials: a reused serial under one CA makes Go's TLS stack reject the chain.
function serial(): string {
  const b = randomBytes(16);
  b[0] = (b[0] ?? 0) & 0x7f;
  return `0x${b.toString('hex')}`;
}

function ecKey(path: string): void {
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', path]);
}

function load(certPath: string, keyPath: string): KeyPair {
  return {
    certPath,
    keyPath,
    certPem: readFileSync(certPath, 'utf8'),
    keyPem: readFileSync(keyPath, 'utf8'),
  };
}

/** Creates a self-signed CA `<dir>/<name>.crt|key`. */
export function mintCa(dir: string, name: string, cn: string): KeyPair {
  const key = join(dir, `${name}.key`);
  const crt = join(dir, `${name}.crt`);
  ecKey(key);
  openssl([
    'req',
    '-x509',
    '-new',
    '-key',
    key,
    '-subj',
    `/CN=${cn}`,
    '-days',
    DAYS,
    '-out',
    crt,
    '-set_serial',
    serial(),
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);
  return load(crt, key);
}

/** What a leaf certificate is for. */
export interface LeafSpec {
  cn: string;
  /** Organisations: Kubernetes reads them as groups of a client certificate. */
  orgs?: string[];
  /** DNS names and IPs (IPs are recognised by shape). */
  sans?: string[];
  usage: 'server' | 'client';
}

/** Issues `<dir>/<name>.crt|key` signed by `ca`. */
export function mintLeaf(dir: string, name: string, ca: KeyPair, spec: LeafSpec): KeyPair {
  const key = join(dir, `${name}.key`);
  const crt = join(dir, `${name}.crt`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  ecKey(key);
  const subj = `/CN=${spec.cn}${(spec.orgs ?? []).map((o) => `/O=${o}`).join('')}`;
  openssl(['req', '-new', '-key', key, '-subj', subj, '-out', csr]);
  const lines = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    `extendedKeyUsage=${spec.usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
  ];
  if (spec.sans?.length) {
    const alt = spec.sans.map((s) => (/^[\d.]+$|:/.test(s) ? `IP:${s}` : `DNS:${s}`));
    lines.push(`subjectAltName=${alt.join(',')}`);
  }
  writeFileSync(ext, `${lines.join('\n')}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.certPath,
    '-CAkey',
    ca.keyPath,
    '-set_serial',
    serial(),
    '-days',
    DAYS,
    '-extfile',
    ext,
    '-out',
    crt,
  ]);
  return load(crt, key);
}

/**
 * Mints a serving certificate for one of the project's HTTPS endpoints, valid for 127.0.0.1,
 * localhost and `<service>.<namespace>.svc` (the ServerName the aggregator and webhooks verify).
 */
export function mintServingCert(
  certs: Pick<ControlPlaneCerts, 'dir' | 'webhookCa'>,
  service: string,
  namespace: string,
): KeyPair {
  const host = `${service}.${namespace}.svc`;
  return mintLeaf(certs.dir, `serving-${service}-${namespace}`, certs.webhookCa, {
    cn: host,
    sans: ['127.0.0.1', 'localhost', host, `${host}.cluster.local`],
    usage: 'server',
  });
}

/** Generates the whole PKI of a control plane into `dir`. */
export function mintControlPlaneCerts(dir: string): ControlPlaneCerts {
  const servingCa = mintCa(dir, 'serving-ca', 'vmpool-serving-ca');
  const clientCa = mintCa(dir, 'client-ca', 'vmpool-client-ca');
  // A separate CA: the apiserver must not accept front-proxy certs as ordinary client certs.
  const frontProxyCa = mintCa(dir, 'front-proxy-ca', 'vmpool-front-proxy-ca');
  const webhookCa = mintCa(dir, 'webhook-ca', 'vmpool-webhook-ca');
  // Its own CA: a webhook that trusts it trusts the API server's webhook client and nobody else.
  const webhookClientCa = mintCa(dir, 'webhook-client-ca', 'vmpool-webhook-client-ca');
  const webhookClient = mintLeaf(dir, 'webhook-client', webhookClientCa, {
    cn: WEBHOOK_CLIENT_CN,
    usage: 'client',
  });
  const apiserver = mintLeaf(dir, 'apiserver', servingCa, {
    cn: 'kube-apiserver',
    sans: ['127.0.0.1', 'localhost', 'kubernetes', 'kubernetes.default.svc', '10.0.0.1'],
    usage: 'server',
  });
  const admin = mintLeaf(dir, 'admin', clientCa, {
    cn: 'admin',
    orgs: ['system:masters'],
    usage: 'client',
  });
  const frontProxyClient = mintLeaf(dir, 'front-proxy-client', frontProxyCa, {
    cn: 'front-proxy-client',
    usage: 'client',
  });
  const saKey = join(dir, 'sa.key');
  const saPub = join(dir, 'sa.pub');
  openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', saKey]);
  openssl(['pkey', '-in', saKey, '-pubout', '-out', saPub]);
  return {
    dir,
    servingCa,
    apiserver,
    clientCa,
    admin,
    frontProxyCa,
    frontProxyClient,
    serviceAccount: { keyPath: saKey, pubPath: saPub },
    webhookCa,
    webhookClientCa,
    webhookClient,
  };
}

/** A kubeconfig (embedded PEMs, so it can be copied elsewhere) for `user` against `server`. */
export function kubeconfigYaml(
  server: string,
  ca: KeyPair,
  user: KeyPair,
  name = 'vmpool-test',
): string {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(ca.certPem)}`,
    'users:',
    '- name: admin',
    '  user:',
    `    client-certificate-data: ${b64(user.certPem)}`,
    `    client-key-data: ${b64(user.keyPem)}`,
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    '    user: admin',
    `current-context: ${name}`,
    '',
  ].join('\n');
}
