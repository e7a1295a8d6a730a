/**
 * The access check of an aggregated API: the caller is the user the kube-apiserver's front proxy
 * names (proven by its client certificate), and that user's right is a SubjectAccessReview.
 * @module
 */
import type { Context } from 'hono';
import type { Kube } from '../kube/index.js';
import type { NodeEnv } from './app.js';
import type { FrontProxy } from './frontproxy.js';
import { authenticate, loadFrontProxy } from './frontproxy.js';
import type { Status } from './status.js';
import { statusFailure } from './status.js';
import type { ClientCertificate } from './tls.js';

/** Settings of {@link createAccessCheck}. */
export interface AccessOptions {
  readonly kube: Kube;
  readonly now: () => Date;
  /** The API group the requests are authorized in. */
  readonly group: string;
  /** The client certificate of a request (the TLS socket's, unless a test supplies one). */
  readonly clientCert: (c: Context<NodeEnv>) => ClientCertificate | undefined;
  /** How long the front-proxy CA read from kube-system is trusted before re-reading (ms). */
  readonly proxyTtlMs?: number;
}

/** The request to authorize: `verb` on a pool (or one of its subresources). */
export interface AccessRequest {
  readonly verb: string;
  readonly namespace: string;
  readonly name: string;
  readonly subresource?: string;
}

/** Authenticates and authorizes; resolves to the refusal, or undefined when allowed. */
export type AccessCheck = (c: Context<NodeEnv>, req: AccessRequest) => Promise<Status | undefined>;

/** An access check that caches the front-proxy settings for `proxyTtlMs` (default a minute). */
export function createAccessCheck(opts: AccessOptions): AccessCheck {
  let proxy: { value: FrontProxy; at: number } | undefined;
  const frontProxy = async (): Promise<FrontProxy | undefined> => {
    const t = opts.now().getTime();
    if (proxy === undefined || t - proxy.at > (opts.proxyTtlMs ?? 60_000)) {
      const value = await loadFrontProxy(opts.kube);
      if (value !== undefined) proxy = { value, at: t };
    }
    return proxy?.value;
  };

  return async function checkAccess(c, { verb, namespace, name, subresource }) {
    const fp = await frontProxy();
    if (fp === undefined)
      return statusFailure(503, 'cannot read the front-proxy CA from kube-system');
    const who = authenticate(opts.clientCert(c), c.req.raw.headers, fp, opts.now());
    if (!who.ok) return statusFailure(401, who.message);
    const sar = await opts.kube.subjectAccessReview({
      user: who.caller.user,
      groups: who.caller.groups,
      extra: who.caller.extra,
      namespace,
      group: opts.group,
      resource: 'virtualmachinepools',
      ...(subresource === undefined ? {} : { subresource }),
      name,
      verb,
    });
    if (!sar.ok) return statusFailure(503, `authorization check failed: ${sar.message}`);
    if (sar.value.allowed) return undefined;
    const resource = `virtualmachinepools${subresource === undefined ? '' : `/${subresource}`}`;
    return statusFailure(
      403,
      `virtualmachinepools.${opts.group} "${name}" is forbidden: User "${who.caller.user}" cannot ${verb} resource "${resource}" in API group "${opts.group}" in the namespace "${namespace}"`,
      name,
    );
  };
}
