/**
 * Installing vmpool's objects into a cluster it shares: raw JSON with vmpool's field manager and
 * ownership labels, never over an object vmpool does not own unless told to, and platform CRDs only
 * where they are missing. What was decided from a read is written conditioned on it: a create is a
 * POST (an object that appeared since is somebody else's and refused, never merged into), an update
 * carries the resourceVersion read (a change since is read again and decided again). Expected
 * refusals are values with a message.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ObjectRef, StoredObject } from '../shared/api/index.js';
import { claimCrd, describeRef, poolCrd, refOf } from '../shared/api/index.js';
import type { Manifests } from '../shared/kube/index.js';
import {
  decideOwned,
  foreignMessage,
  ownedByVmpool,
  provenance,
  withOwnership,
  withResourceVersion,
} from './ownership.js';
import { schemaMismatch } from './schema-check.js';

/** What an install step came to. */
export type Installed =
  | {
      readonly ok: true;
      readonly action: 'created' | 'updated' | 'tookOver' | 'present';
      readonly object: StoredObject;
      /** What was there before a take-over, to restore on exit ({@link restoreTakenOver}). */
      readonly previous?: StoredObject;
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

/** Reads and decisions an install makes before it gives up on an object that keeps changing. */
const INSTALL_ATTEMPTS = 3;

/** The refusal of an object somebody else created between vmpool's read and its create. */
export function createdMeanwhileMessage(
  ref: ObjectRef,
  now: StoredObject | undefined,
  todo: string,
): string {
  const whose = now === undefined ? 'gone again since' : provenance(now);
  return `${describeRef(ref)} was created by somebody else while vmpool was installing it (${whose}); vmpool left it unchanged. ${todo}`;
}

/**
 * Installs an object that is vmpool's: created when missing, updated when it carries vmpool's
 * label, replaced only with `takeOver` (the object it replaced comes back as `previous`); otherwise
 * refused with what exists, who wrote it and `todo`. An object created by somebody else after the
 * read is refused whatever `takeOver` says: the operator never saw it.
 */
export async function installOwned(
  ctx: InstallContext,
  obj: object,
  todo: string,
): Promise<Installed> {
  const ref = refOf(obj);
  for (let attempt = 0; attempt < INSTALL_ATTEMPTS; attempt++) {
    const have = await existing(ctx.manifests, ref);
    if (!have.ok) return have;
    const decision = decideOwned(have.value, ctx.takeOver);
    if (have.value === undefined) {
      const created = await ctx.manifests.create(withOwnership(obj));
      if (created.ok) return { ok: true, action: 'created', object: created.value };
      if (created.reason !== 'alreadyExists')
        return { ok: false, message: `create ${describeRef(ref)}: ${created.message}` };
      const now = await existing(ctx.manifests, ref);
      // A create of ours answered late (its retry found it) is ours; anything else is not.
      if (now.ok && now.value !== undefined && ownedByVmpool(now.value)) continue;
      return {
        ok: false,
        message: createdMeanwhileMessage(ref, now.ok ? now.value : undefined, todo),
      };
    }
    if (decision.kind === 'refuse')
      return { ok: false, message: foreignMessage(ref, have.value, todo) };
    // force: fields another manager set on an object vmpool owns (or was told to take) become
    // vmpool's; the resourceVersion makes it the object just judged, not a later one.
    const version = have.value.metadata.resourceVersion;
    const applied = await ctx.manifests.apply(withResourceVersion(withOwnership(obj), version), {
      force: true,
    });
    if (applied.ok)
      return decision.kind === 'takeOver'
        ? { ok: true, action: 'tookOver', object: applied.value, previous: have.value }
        : { ok: true, action: 'updated', object: applied.value };
    if (applied.reason !== 'conflict')
      return { ok: false, message: `apply ${describeRef(ref)}: ${applied.message}` };
  }
  return {
    ok: false,
    message: `${describeRef(ref)} kept changing while vmpool was installing it (${String(INSTALL_ATTEMPTS)} reads); vmpool left it as it is. Run again.`,
  };
}

/** Creates an object only where none of that name exists; an existing one is used as it is. */
export async function installIfMissing(ctx: InstallContext, obj: object): Promise<Installed> {
  const ref = refOf(obj);
  const have = await existing(ctx.manifests, ref);
  if (!have.ok) return have;
  if (have.value !== undefined) return { ok: true, action: 'present', object: have.value };
  const created = await ctx.manifests.create(withOwnership(obj));
  if (created.ok) return { ok: true, action: 'created', object: created.value };
  if (created.reason !== 'alreadyExists')
    return { ok: false, message: `create ${describeRef(ref)}: ${created.message}` };
  // Somebody created it meanwhile: used as it is, like one found at the first read.
  const now = await existing(ctx.manifests, ref);
  if (!now.ok) return now;
  if (now.value === undefined)
    return {
      ok: false,
      message: `${describeRef(ref)} was created and deleted meanwhile: run again`,
    };
  return { ok: true, action: 'present', object: now.value };
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
  return installCrd(ctx, poolCrd(), POOL_CRD_TODO, 'pools', timeoutMs);
}

/** What the operator can do when the claim CRD is somebody else's. */
export const CLAIM_CRD_TODO =
  "The VirtualMachineClaim CRD is in vmpool's own group; an object of this name that is not vmpool's was put there by hand or by another tool: remove it, or run again with --take-over to replace it.";

/** Installs vmpool's VirtualMachineClaim CRD, as {@link installPoolCrd} installs the pool's. */
export async function installClaimCrd(ctx: InstallContext, timeoutMs = 30_000): Promise<Installed> {
  return installCrd(ctx, claimCrd(), CLAIM_CRD_TODO, 'claims', timeoutMs);
}

async function installCrd(
  ctx: InstallContext,
  crd: Record<string, unknown>,
  advice: string,
  objects: string,
  timeoutMs: number,
): Promise<Installed> {
  const done = await installOwned(ctx, crd, advice);
  if (!done.ok) return done;
  const ref = refOf(crd);
  const served = await readBackEstablished(ctx.manifests, ref, timeoutMs);
  if (!served.ok) return served;
  const drift = schemaMismatch(crd, served.value);
  if (drift !== undefined)
    return {
      ok: false,
      message: `${describeRef(ref)} was applied but the API server serves a different schema (${drift}; ${provenance(served.value)}): ${objects} would be refused or pruned. Another writer may have changed it meanwhile, or something on the path rewrote the manifest.`,
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

/**
 * Puts back what a take-over replaced (`previous`, as read before it), while the object is still
 * the one taken over and still vmpool's; otherwise it is left as it is. Meant for objects vmpool
 * replaces wholesale (APIService, webhook configuration, Service). Undefined when done, else why not.
 */
export async function restoreTakenOver(
  m: Manifests,
  previous: StoredObject,
): Promise<string | undefined> {
  const ref = refOf(previous);
  // A 409 is most often the aggregator writing the APIService's status meanwhile: read again and
  // decide again (a few times), never write over a change of somebody else's.
  for (let attempt = 1; ; attempt++) {
    const have = await existing(m, ref);
    if (!have.ok) return have.message;
    const now = have.value;
    if (now === undefined) return `${describeRef(ref)} is gone: nothing to restore`;
    if (now.metadata.uid !== previous.metadata.uid || !ownedByVmpool(now))
      return `${describeRef(ref)} is no longer the object vmpool took over (${provenance(now)}): left in place, not restored`;
    const meta = { ...previous.metadata, resourceVersion: now.metadata.resourceVersion };
    // Its own managedFields are the API server's to keep; the version read just now conditions the
    // write, so a change since is somebody else's and is not undone.
    delete meta.managedFields;
    const back = await m.replace({ ...previous, metadata: meta });
    if (back.ok) return undefined;
    if (back.reason !== 'conflict' || attempt >= RESTORE_ATTEMPTS)
      return `restore ${describeRef(ref)}: ${back.message}`;
  }
}

/** Reads and writes a restore may take when its object keeps changing under it. */
const RESTORE_ATTEMPTS = 5;
