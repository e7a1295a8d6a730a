/**
 * Who is calling the aggregated API: only the kube-apiserver's front proxy, proven by its client
 * certificate, may assert a user in X-Remote-* headers; the user's right comes from a
 * SubjectAccessReview.
 * @module
 */
import type { X509Certificate } from 'node:crypto';
import type { ClientCertificate } from './tls.js';
import { signedBy } from './tls.js';
import type { Kube } from '../kube/index.js';

/** The front-proxy settings the API server publishes in kube-system. */
export interface FrontProxy {
  readonly caPem: string;
  readonly allowedNames: readonly string[];
  readonly userHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraPrefixes: readonly string[];
}

/** An authenticated caller. */
export interface Caller {
  readonly user: string;
  readonly groups: string[];
  readonly extra: Record<string, string[]>;
}

function list(text: string | undefined, fallback: string[]): string[] {
  if (text === undefined || text === '') return fallback;
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : fallback;
  } catch {
    return fallback;
  }
}

/** Reads `kube-system/extension-apiserver-authentication`; undefined when it has no front-proxy CA. */
export async function loadFrontProxy(kube: Kube): Promise<FrontProxy | undefined> {
  const cm = await kube.getConfigMapData('kube-system', 'extension-apiserver-authentication');
  if (!cm.ok) return undefined;
  const caPem = cm.value['requestheader-client-ca-file'];
  if (caPem === undefined || caPem === '') return undefined;
  return {
    caPem,
    allowedNames: list(cm.value['requestheader-allowed-names'], []),
    userHeaders: list(cm.value['requestheader-username-headers'], ['X-Remote-User']),
    groupHeaders: list(cm.value['requestheader-group-headers'], ['X-Remote-Group']),
    extraPrefixes: list(cm.value['requestheader-extra-headers-prefix'], ['X-Remote-Extra-']),
  };
}

/** The subject's common name of a certificate. */
export function commonName(cert: X509Certificate): string | undefined {
  const line = cert.subject.split('\n').find((l) => l.startsWith('CN='));
  return line?.slice(3);
}

/** Authenticates a request; the reason is a 401 message. */
export function authenticate(
  cert: ClientCertificate | undefined,
  headers: Headers,
  proxy: FrontProxy,
  now: Date = new Date(),
): { ok: true; caller: Caller } | { ok: false; message: string } {
  const leaf = cert?.chain[0];
  if (leaf === undefined)
    return { ok: false, message: 'a front-proxy client certificate is required' };
  if (!signedBy(leaf, proxy.caPem, now))
    return { ok: false, message: 'the client certificate is not signed by the front-proxy CA' };
  const cn = commonName(leaf);
  if (proxy.allowedNames.length > 0 && (cn === undefined || !proxy.allowedNames.includes(cn)))
    return {
      ok: false,
      message: `client certificate name "${cn ?? ''}" is not an allowed front proxy`,
    };
  const user = proxy.userHeaders.map((h) => headers.get(h)).find((v) => v !== null && v !== '');
  if (user === undefined || user === null)
    return { ok: false, message: 'the front proxy did not name a user' };
  const groups: string[] = [];
  for (const h of proxy.groupHeaders) {
    const v = headers.get(h);
    if (v !== null)
      groups.push(
        ...v
          .split(',')
          .map((g) => g.trim())
          .filter((g) => g !== ''),
      );
  }
  const extra: Record<string, string[]> = {};
  headers.forEach((value, key) => {
    const prefix = proxy.extraPrefixes.find((p) => key.toLowerCase().startsWith(p.toLowerCase()));
    if (prefix === undefined) return;
    const name = decodeURIComponent(key.slice(prefix.length)).toLowerCase();
    extra[name] = [...(extra[name] ?? []), value];
  });
  return { ok: true, caller: { user, groups, extra } };
}
