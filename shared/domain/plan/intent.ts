/**
 * The intent as stored: empty lists dropped, standby creates only among the creates.
 * @module
 */
import type { Intent, VirtualMachinePool } from '../../api/index.js';

/** An intent with empty lists dropped, or undefined when nothing is pending. */
export function normalizeIntent(intent: Intent): Intent | undefined {
  const out: Intent = {};
  if (intent.creates?.length) out.creates = [...intent.creates];
  if (intent.deletes?.length) out.deletes = [...intent.deletes];
  if (intent.bindings?.length) out.bindings = [...intent.bindings];
  if (intent.claims?.length) out.claims = [...intent.claims];
  const creating = new Set(out.creates);
  const standby = intent.standbyCreates?.filter((n) => creating.has(n));
  if (standby?.length) out.standbyCreates = standby;
  if (intent.promotions?.length) out.promotions = [...intent.promotions];
  if (intent.returns?.length) out.returns = [...intent.returns];
  return Object.keys(out).length === 0 ? undefined : out;
}

/**
 * The creates a freshly read pool still asks for, as seen by an executor working through a plan made
 * from `planned`: none once that pool is gone (deleted, Terminating, re-created under its name),
 * paused, or its spec changed (a scale taken back is in the spec long before a pass drops the creates
 * it no longer asks for). A name that left the intent was made and observed by another pass, or
 * dropped: creating it now would make it a second time (after a scale-down or the garbage collector
 * removed it) or outlive the desire that recorded it (L1).
 */
export function createsStillIntended(
  fresh: VirtualMachinePool | undefined,
  planned: VirtualMachinePool,
): ReadonlySet<string> {
  if (fresh === undefined || fresh.metadata.uid !== planned.metadata.uid) return new Set();
  if (fresh.metadata.generation !== planned.metadata.generation) return new Set();
  if (fresh.metadata.deletionTimestamp !== undefined || fresh.spec.paused === true)
    return new Set();
  return new Set(fresh.status?.intent?.creates ?? []);
}
