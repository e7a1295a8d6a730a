/**
 * The credentials of a function process, found the way kubectl and client-node find them
 * (`$KUBECONFIG`, `~/.kube/config`, the in-cluster service account), without loading client-node
 * for the common cases: a service account, or one kubeconfig file with certificates and tokens.
 * Anything else (several files to merge, exec plugins, auth providers, proxies, basic auth) is
 * handed to client-node's KubeConfig, loaded only then.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import type { RequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import type { Credentials } from './transport.js';

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** How often a token file is read again (client-node's FileAuth does the same: projected tokens rotate). */
const TOKEN_REREAD_MS = 60_000;

/** One cluster and user, resolved: what a request needs. */
interface Resolved {
  readonly server: string;
  readonly caFile?: string;
  readonly caData?: Buffer;
  readonly certFile?: string;
  readonly certData?: Buffer;
  readonly keyFile?: string;
  readonly keyData?: Buffer;
  readonly token?: string;
  readonly tokenFile?: string;
  readonly insecure: boolean;
  readonly serverName?: string;
}

/**
 * The process's credentials. Loads client-node only when the kubeconfig needs what the lean path
 * does not do.
 */
export async function loadCredentials(env: NodeJS.ProcessEnv = process.env): Promise<Credentials> {
  const lean = await leanCredentials(env);
  if (lean !== undefined) return lean;
  const { KubeConfig } = await import('@kubernetes/client-node/dist/config.js');
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

/**
 * Credentials without client-node, or undefined when the configuration needs it.
 * @param serviceAccount where the in-cluster token and CA are mounted (tests use a temp dir)
 */
export async function leanCredentials(
  env: NodeJS.ProcessEnv,
  serviceAccount: string = SERVICE_ACCOUNT,
): Promise<Credentials | undefined> {
  const files = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (files.length > 1) return undefined;
  const home = join(env.HOME ?? homedir(), '.kube', 'config');
  const file = files[0] ?? (existsSync(home) ? home : undefined);
  if (file !== undefined) {
    const resolved = await fromKubeconfig(file);
    return resolved === undefined ? undefined : credentialsOf(resolved);
  }
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (host === undefined || port === undefined || !existsSync(join(serviceAccount, 'token')))
    return undefined;
  return credentialsOf({
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    caFile: join(serviceAccount, 'ca.crt'),
    tokenFile: join(serviceAccount, 'token'),
    insecure: false,
  });
}

type Dict = Readonly<Record<string, unknown>>;

const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (d: Dict, k: string): string | undefined =>
  typeof d[k] === 'string' && d[k] !== '' ? d[k] : undefined;

/** The named entry of a kubeconfig list (`clusters`, `users`, `contexts`), its inner object. */
function entry(doc: Dict, list: string, name: string | undefined, inner: string): Dict | undefined {
  const items = doc[list];
  if (!Array.isArray(items) || name === undefined) return undefined;
  const found: unknown = items.find((i) => isDict(i) && i.name === name);
  return isDict(found) && isDict(found[inner]) ? found[inner] : undefined;
}

/** Keys of a user the lean path handles; any other (exec, auth-provider, username, as, …) is not. */
const LEAN_USER = new Set([
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'token',
  'tokenFile',
]);
const LEAN_CLUSTER = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'extensions',
]);

/** The current context of one kubeconfig file (JSON, or YAML parsed on demand). */
async function fromKubeconfig(file: string): Promise<Resolved | undefined> {
  const raw = readFileSync(file, 'utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch {
    // yaml is CommonJS: its exports are the default export of the dynamic import.
    doc = (await import('yaml')).default.parse(raw);
  }
  if (!isDict(doc)) return undefined;
  const context = entry(doc, 'contexts', text(doc, 'current-context'), 'context');
  if (context === undefined) return undefined;
  const cluster = entry(doc, 'clusters', text(context, 'cluster'), 'cluster');
  const user = entry(doc, 'users', text(context, 'user'), 'user');
  const server = cluster === undefined ? undefined : text(cluster, 'server');
  if (cluster === undefined || user === undefined || server === undefined) return undefined;
  if (!Object.keys(user).every((k) => LEAN_USER.has(k))) return undefined;
  if (!Object.keys(cluster).every((k) => LEAN_CLUSTER.has(k))) return undefined;
  const at = (k: string, d: Dict): string | undefined => {
    const p = text(d, k);
    return p === undefined || isAbsolute(p) ? p : join(dirname(file), p);
  };
  const data = (k: string, d: Dict): Buffer | undefined => {
    const b64 = text(d, k);
    return b64 === undefined ? undefined : Buffer.from(b64, 'base64');
  };
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  // As client-node: plain HTTP only when verification is explicitly off.
  if (server.startsWith('http:') && !insecure) return undefined;
  const opt = <T>(k: string, v: T | undefined): Record<string, T> =>
    v === undefined ? {} : { [k]: v };
  return {
    server,
    insecure,
    ...opt('caFile', at('certificate-authority', cluster)),
    ...opt('caData', data('certificate-authority-data', cluster)),
    ...opt('certFile', at('client-certificate', user)),
    ...opt('certData', data('client-certificate-data', user)),
    ...opt('keyFile', at('client-key', user)),
    ...opt('keyData', data('client-key-data', user)),
    ...opt('token', text(user, 'token')),
    ...opt('tokenFile', at('tokenFile', user)),
    ...opt('serverName', text(cluster, 'tls-server-name')),
  };
}

/**
 * {@link Credentials} of a resolved context. Files are read on every request, as client-node does
 * (certificates and CAs rotate on disk); a token file at most once a minute.
 */
function credentialsOf(r: Resolved): Credentials {
  let token: { value: string; readAt: number } | undefined;
  const tokenNow = (file: string): string => {
    const now = Date.now();
    if (token === undefined || now - token.readAt >= TOKEN_REREAD_MS)
      token = { value: readFileSync(file, 'utf8').trim(), readAt: now };
    return token.value;
  };
  const fileOr = (file: string | undefined, data: Buffer | undefined): Buffer | undefined =>
    file === undefined ? data : readFileSync(file);
  return {
    getCurrentCluster: () => ({ server: r.server }),
    applyToHTTPSOptions(opts: RequestOptions): Promise<void> {
      const ca = fileOr(r.caFile, r.caData);
      const cert = fileOr(r.certFile, r.certData);
      const key = fileOr(r.keyFile, r.keyData);
      if (ca !== undefined) opts.ca = ca;
      if (cert !== undefined) opts.cert = cert;
      if (key !== undefined) opts.key = key;
      if (r.insecure) opts.rejectUnauthorized = false;
      if (r.serverName !== undefined) opts.servername = r.serverName;
      const bearer = r.tokenFile === undefined ? r.token : tokenNow(r.tokenFile);
      // The transport passes headers as an object (never the raw-array form).
      const headers = (opts.headers ?? {}) as OutgoingHttpHeaders;
      if (bearer !== undefined) opts.headers = { ...headers, authorization: `Bearer ${bearer}` };
      return Promise.resolve();
    },
  };
}
