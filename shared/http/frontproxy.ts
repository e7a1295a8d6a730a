/**
 * Who is calling the aggregated API: only the kube-apiserver's front proxy, proven by its client
 * certificate, may assert a user in X-Remote-* headers; the user's right comes from a
 * SubjectAccessReview.
 * @module
 */
import type { X509Certificate } from 'node:crypto';
import type { Context } from 'hono';
import type { Caller, NodeEnv } from './env.js';
import type { ClientCertificate } from './tls.js';
import { signedBy } from './tls.js';
import type { Kube } from '../kube/index.js';

/** The front-proxy settings the API server publishes in kube-system. */
export interface FrontProxy {
  readonly caPem: string;
  readonly allowedNames: readonly string[];
  readonly userHeaders: readonly string[];
  /** Trusted only when the API server publishes them: an older front proxy passes a client's on. */
  readonly uidHeaders: readonly string[];
  readonly groupHeaders: readonly string[];
  readonly extraPrefixes: readonly string[];
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
    uidHeaders: list(cm.value['requestheader-uid-headers'], []),
    groupHeaders: list(cm.value['requestheader-group-headers'], ['X-Remote-Group']),
    extraPrefixes: list(cm.value['requestheader-extra-headers-prefix'], ['X-Remote-Extra-']),
  };
}

/** The subject's common name of a certificate. */
export function commonName(cert: X509Certificate): string | undefined {
  const line = cert.subject.split('\n').find((l) => l.startsWith('CN='));
  return line?.slice(3);
}

/**
 * A request's header lines as sent, `[name, value]` each: a header repeated on several lines stays
 * several values. The front proxy sends one `X-Remote-Group` line per group, and a group's name may
 * hold a comma, so the lines must never be joined and split again.
 */
export type HeaderLines = ReadonlyArray<readonly [string, string]>;

/**
 * The header lines of a request: the raw lines Node received, or (for a request that did not come
 * through a socket, as in `app.request()`) the Fetch headers, whose repeated values arrive joined
 * and are then taken as one value each.
 */
export function headerLines(c: Context<NodeEnv>): HeaderLines {
  // `env` is absent for requests made in-process; hono's typing does not know that.
  const raw = (c.env as Partial<NodeEnv['Bindings']> | undefined)?.incoming?.rawHeaders;
  if (raw === undefined) return [...c.req.raw.headers.entries()];
  const out: Array<readonly [string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i] ?? '', raw[i + 1] ?? '']);
  return out;
}

/** The OIDs of the extended key usages a certificate allows (empty when it names none). */
function extendedKeyUsages(cert: X509Certificate): readonly string[] {
  // Node 22 renamed `keyUsage` (which always held the extended key usages) to `extKeyUsage`.
  const c = cert as unknown as { extKeyUsage?: string[]; keyUsage?: string[] };
  return c.extKeyUsage ?? c.keyUsage ?? [];
}

/** The refusal of a certificate the front-proxy CA did not sign (or not for now). */
export const NOT_SIGNED = 'the client certificate is not signed by the front-proxy CA';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_USAGE = '2.5.29.37.0';

/** True when a certificate may authenticate a client (clientAuth, or any extended usage). */
export function validForClientAuth(cert: X509Certificate): boolean {
  const usages = extendedKeyUsages(cert);
  return usages.includes(CLIENT_AUTH) || usages.includes(ANY_USAGE);
}

const lower = (s: string): string => s.toLowerCase();

/** Authenticates a request; the reason is a 401 message. */
export function authenticate(
  cert: ClientCertificate | undefined,
  lines: HeaderLines,
  proxy: FrontProxy,
  now: Date = new Date(),
): { ok: true; caller: Caller } | { ok: false; message: string } {
  const leaf = cert?.chain[0];
  if (leaf === undefined)
    return { ok: false, message: 'a front-proxy client certificate is required' };
  if (!signedBy(leaf, proxy.caPem, now)) return { ok: false, message: NOT_SIGNED };
  // As the API server's own request-header authenticator demands: a certificate issued for another
  // purpose (a serving certificate from the same CA) does not make its holder a front proxy.
  if (!validForClientAuth(leaf))
    return { ok: false, message: 'the client certificate is not valid for client authentication' };
  const cn = commonName(leaf);
  if (proxy.allowedNames.length > 0 && (cn === undefined || !proxy.allowedNames.includes(cn)))
    return {
      ok: false,
      message: `client certificate name "${cn ?? ''}" is not an allowed front proxy`,
    };
  const values = (names: readonly string[]): string[] =>
    names.flatMap((h) =>
      lines.filter(([k, v]) => lower(k) === lower(h) && v !== '').map(([, v]) => v),
    );
  const user = values(proxy.userHeaders)[0];
  if (user === undefined) return { ok: false, message: 'the front proxy did not name a user' };
  const uid = values(proxy.uidHeaders)[0];
  const extra: Record<string, string[]> = {};
  for (const prefix of proxy.extraPrefixes)
    for (const [key, value] of lines) {
      if (!lower(key).startsWith(lower(prefix))) continue;
      let name: string;
      try {
        name = decodeURIComponent(lower(key.slice(prefix.length)));
      } catch {
        return { ok: false, message: `malformed extra header "${key}"` };
      }
      extra[name] = [...(extra[name] ?? []), value];
    }
  const groups = values(proxy.groupHeaders);
  return { ok: true, caller: { user, ...(uid === undefined ? {} : { uid }), groups, extra } };
}
