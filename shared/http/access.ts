/**
 * The access check of an aggregated API: the caller is the user the kube-apiserver's front proxy
 * names (proven by its client certificate), and that user's right is a SubjectAccessReview. The
 * certificate is looked at first: a request without one costs no API call.
 * @module
 */
import type { Context } from 'hono';
import type { Kube } from '../kube/index.js';
import type { Caller, NodeEnv } from './env.js';
import type { FrontProxy } from './frontproxy.js';
import { NOT_SIGNED, authenticate, headerLines, loadFrontProxy } from './frontproxy.js';
import type { Status } from '../api/index.js';
import { statusFailure } from '../api/index.js';
import type { ClientCertificate } from './tls.js';

/** Settings of {@link createAccessCheck}. */
export interface AccessOptions {
  readonly kube: Kube;
  readonly now: () => Date;
  /** The API group the requests are authorized in. */
  readonly group: string;
  /** The client certificate of a request (the TLS socket's, unless a test supplies one). */
  readonly clientCert: (c: Context<NodeEnv>) => ClientCertificate | undefined;
  /** How long the front-proxy CA read from kube-system is used before it is read again (ms). */
  readonly proxyTtlMs?: number;
  /**
   * How long a CA older than `proxyTtlMs` is still used while it cannot be read again (ms): long
   * enough to ride out an API server restart, short enough that a CA the cluster withdrew stops
   * being trusted.
   */
  readonly proxyMaxStaleMs?: number;
  /** The least time between two reads of the CA (ms), so failing reads cannot become a flood. */
  readonly proxyRetryMs?: number;
}

/** The request to authorize: `verb` on a pool (or one of its subresources). */
export interface AccessRequest {
  readonly verb: string;
  readonly namespace: string;
  readonly name: string;
  readonly subresource?: string;
}

/**
 * Authenticates and authorizes; resolves to the refusal, or undefined when allowed (the caller is
 * then `c.get('caller')`).
 */
export type AccessCheck = (c: Context<NodeEnv>, req: AccessRequest) => Promise<Status | undefined>;

/**
 * The front-proxy settings, read when first needed, re-read after `ttlMs`, or sooner (`force`) when
 * a certificate does not verify against them (the CA may have been rotated); at most one read per
 * `retryMs` and one at a time. A copy that cannot be refreshed is dropped after `maxStaleMs`.
 */
function frontProxyCache(
  kube: Kube,
  now: () => number,
  { ttlMs, maxStaleMs, retryMs }: { ttlMs: number; maxStaleMs: number; retryMs: number },
): (force?: boolean) => Promise<FrontProxy | undefined> {
  let cached: { value: FrontProxy; at: number } | undefined;
  let tried = Number.NEGATIVE_INFINITY;
  let reading: Promise<void> | undefined;
  const read = (): Promise<void> =>
    (reading ??= (async () => {
      tried = now();
      const value = await loadFrontProxy(kube);
      if (value !== undefined) cached = { value, at: now() };
    })().finally(() => {
      reading = undefined;
    }));
  return async function frontProxy(force = false) {
    const age = cached === undefined ? Number.POSITIVE_INFINITY : now() - cached.at;
    if ((force || age > ttlMs) && now() - tried >= retryMs) await read();
    else if (reading !== undefined) await reading;
    if (cached === undefined || now() - cached.at > maxStaleMs) return undefined;
    return cached.value;
  };
}

/** An access check; see {@link AccessOptions} for how the front-proxy CA is cached. */
export function createAccessCheck(opts: AccessOptions): AccessCheck {
  const ttlMs = opts.proxyTtlMs ?? 60_000;
  const frontProxy = frontProxyCache(opts.kube, () => opts.now().getTime(), {
    ttlMs,
    maxStaleMs: opts.proxyMaxStaleMs ?? Math.max(5 * ttlMs, 300_000),
    retryMs: opts.proxyRetryMs ?? 5_000,
  });

  return async function checkAccess(c, req) {
    // Without a certificate nobody can be authenticated: answered before anything is read, so an
    // anonymous caller costs the API server nothing.
    const cert = opts.clientCert(c);
    if (cert === undefined)
      return statusFailure(401, 'a front-proxy client certificate is required');
    let fp = await frontProxy();
    if (fp === undefined)
      return statusFailure(503, 'cannot read the front-proxy CA from kube-system');
    const lines = headerLines(c);
    let who = authenticate(cert, lines, fp, opts.now());
    if (!who.ok && who.message === NOT_SIGNED) {
      fp = await frontProxy(true);
      if (fp !== undefined) who = authenticate(cert, lines, fp, opts.now());
    }
    if (!who.ok) return statusFailure(401, who.message);
    return authorize(c, opts.kube, opts.group, who.caller, req);
  };
}

/**
 * The authorization half of an access check: a SubjectAccessReview of `caller` for the request,
 * answered as the API server words a refusal. The caller is recorded on the context for audit lines.
 */
export async function authorize(
  c: Context<NodeEnv>,
  kube: Kube,
  group: string,
  caller: Caller,
  { verb, namespace, name, subresource }: AccessRequest,
): Promise<Status | undefined> {
  const sar = await kube.subjectAccessReview({
    user: caller.user,
    ...(caller.uid === undefined ? {} : { uid: caller.uid }),
    groups: caller.groups,
    extra: caller.extra,
    namespace,
    group,
    resource: 'virtualmachinepools',
    ...(subresource === undefined ? {} : { subresource }),
    name,
    verb,
  });
  if (!sar.ok) return statusFailure(503, `authorization check failed: ${sar.message}`);
  c.set('caller', caller);
  if (sar.value.allowed) return undefined;
  const resource = `virtualmachinepools${subresource === undefined ? '' : `/${subresource}`}`;
  return statusFailure(
    403,
    `virtualmachinepools.${group} "${name}" is forbidden: User "${caller.user}" cannot ${verb} resource "${resource}" in API group "${group}" in the namespace "${namespace}"`,
    name,
  );
}

/** Who an access check let in (or refused), as the fields of an audit log line. */
export function auditFields(c: Context<NodeEnv>): {
  user?: string;
  uid?: string;
  groups?: string[];
} {
  const caller = c.get('caller');
  if (caller === undefined) return {};
  return {
    user: caller.user,
    ...(caller.uid === undefined ? {} : { uid: caller.uid }),
    groups: caller.groups,
  };
}
