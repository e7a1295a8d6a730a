/**
 * The intent as stored: empty lists dropped, standby creates only among the creates.
 * @module
 */
import type { Intent } from '../../api/index.js';

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
