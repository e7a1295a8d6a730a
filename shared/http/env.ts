/**
 * The Hono env every app of vmpool is served with, and who its access check authenticated: one
 * module the app and its middlewares (front proxy, TLS, OIDC, access) all read, so none of them
 * imports another for a type.
 * @module
 */
import type { HttpBindings } from '@hono/node-server';

/** An authenticated caller. */
export interface Caller {
  readonly user: string;
  readonly uid?: string;
  readonly groups: string[];
  readonly extra: Record<string, string[]>;
}

/**
 * Hono env of apps served by @hono/node-server: the raw Node request is `c.env.incoming`; `caller`
 * is who an access check authenticated (for audit lines).
 */
export interface NodeEnv {
  Bindings: HttpBindings;
  Variables: { caller?: Caller };
}
