/**
 * Installing vmpool's objects into a cluster it shares: raw-JSON server-side apply with vmpool's
 * field manager and ownership labels, never over an object vmpool does not own unless told to, and
 * platform CRDs only where they are missing. Expected refusals are values with a message.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ObjectRef, StoredObject } from '../shared/api/index.js';
import { describeRef, poolCrd, refOf } from '../shared/api/index.js';
import type { Manifests } from '../shared/kube/index.js';
import { decideOwned, foreignMessage, provenance, withOwnership } from './ownership.js';
import { schemaMismatch } from './schema-check.js';

/** What an install step came to. */
export type Installed =
  | {
      readonly ok: true;
      readonly action: 'created' | 'updated' | 'tookOver' | 'present';
      readonly object: StoredObject;
    }
  | { readonly ok: false; readonly message: string };

/** Where and how to install. */
export interface InstallContext {
  readonly manifests: Manifests;
  /** The operator's `--take-over`: replace objects of vmpool's names that are not vmpool's. */
  readonly takeOver: boolean;
}

/** The stored object of `ref`, undefined when missing; other failures as a message. */
async function existing(
  m: Manifests,
  ref: ObjectRef,
): Promise<{ ok: true; value: StoredObject | undefined } | { ok: false; message: string }> {
  const got = await m.get(ref);
  if (got.ok) return { ok: true, value: got.value };
  if (got.reason === 'notFound') return { ok: true, value: undefined };
  return { ok: false, message: `cannot read ${describeRef(ref)}: ${got.message}` };
}

/**
 * Applies an object that is vmpool's: created when missing, updated when it carries vmpool's label,
 * replaced only with `takeOver`; otherwise refused with what exists, who wrote it and `todo`.
 */
export async function installOwned(
  ctx: InstallContext,
  obj: object,
  todo: string,
): Promise<Installed> {
  const ref = refOf(obj);
  const have = await existing(ctx.manifests, ref);
  if (!have.ok) return have;
  const decision = decideOwned(have.value, ctx.takeOver);
  if (decision.kind === 'refuse' && have.value !== undefined)
    return { ok: false, message: foreignMessage(ref, have.value, todo) };
  // force: fields another manager set on an object vmpool owns (or was told to take) become vmpool's.
  const applied = await ctx.manifests.apply(withOwnership(obj), {
    force: decision.kind !== 'create',
  });
  if (!applied.ok) return { ok: false, message: `apply ${describeRef(ref)}: ${applied.message}` };
  const action =
    decision.kind === 'create' ? 'created' : decision.kind === 'update' ? 'updated' : 'tookOver';
  return { ok: true, action, object: applied.value };
}

/** Creates an object only where none of that name exists; an existing one is used as it is. */
export async function installIfMissing(ctx: InstallContext, obj: object): Promise<Installed> {
  const ref = refOf(obj);
  const have = await existing(ctx.manifests, ref);
  if (!have.ok) return have;
  if (have.value !== undefined) return { ok: true, action: 'present', object: have.value };
  const applied = await ctx.manifests.apply(withOwnership(obj));
  if (!applied.ok) return { ok: false, message: `apply ${describeRef(ref)}: ${applied.message}` };
  return { ok: true, action: 'created', object: applied.value };
}

function established(crd: StoredObject): boolean {
  const conditions = (crd as { status?: { conditions?: unknown } }).status?.conditions;
  return (
    Array.isArray(conditions) &&
    conditions.some(
      (c: { type?: unknown; status?: unknown }) => c.type === 'Established' && c.status === 'True',
    )
  );
}

/** Polls a CRD until it is Established, then returns the stored object as read back. */
async function readBackEstablished(
  m: Manifests,
  ref: ObjectRef,
  timeoutMs: number,
): Promise<{ ok: true; value: StoredObject } | { ok: false; message: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await m.get(ref);
    if (got.ok && established(got.value)) return got;
    if (Date.now() > deadline)
      return {
        ok: false,
        message: `${describeRef(ref)} is not Established after ${timeoutMs} ms${got.ok ? '' : `: ${got.message}`}`,
      };
    await sleep(200);
  }
}

/** What the operator can do when the pool CRD is somebody else's. */
export const POOL_CRD_TODO =
  "If it is the virtualization platform's own VirtualMachinePool CRD, its pool controller manages those pools and vmpool must not run beside it: vmpool refuses to replace it. Only once the platform's pool controller is disabled, run again with --take-over to install vmpool's CRD (stored pools are kept; vmpool takes them over).";

/**
 * Installs vmpool's pool CRD (see {@link installOwned}), waits until it is Established, reads it
 * back and checks the served schema is the generated one, `x-kubernetes-*` keys included.
 */
export async function installPoolCrd(ctx: InstallContext, timeoutMs = 30_000): Promise<Installed> {
  const crd = poolCrd();
  const done = await installOwned(ctx, crd, POOL_CRD_TODO);
  if (!done.ok) return done;
  const ref = refOf(crd);
  const served = await readBackEstablished(ctx.manifests, ref, timeoutMs);
  if (!served.ok) return served;
  const drift = schemaMismatch(crd, served.value);
  if (drift !== undefined)
    return {
      ok: false,
      message: `${describeRef(ref)} was applied but the API server serves a different schema (${drift}; ${provenance(served.value)}): pools would be refused or pruned. Another writer may have changed it meanwhile, or something on the path rewrote the manifest.`,
    };
  return { ...done, object: served.value };
}

/** Deletes an object only while it is still vmpool's (uid precondition); gone counts as done. */
export async function removeOwned(m: Manifests, ref: ObjectRef): Promise<string | undefined> {
  const have = await existing(m, ref);
  if (!have.ok) return have.message;
  if (have.value === undefined) return undefined;
  if (decideOwned(have.value, false).kind !== 'update')
    return `${describeRef(ref)} is no longer vmpool's (${provenance(have.value)}): left in place`;
  const uid = have.value.metadata.uid;
  if (uid === undefined) return `${describeRef(ref)} has no uid: left in place`;
  const gone = await m.remove(ref, { uid });
  return gone.ok || gone.reason === 'notFound'
    ? undefined
    : `delete ${describeRef(ref)}: ${gone.message}`;
}
