/**
 * Admission of VirtualMachineClaims and of a pool's `spec.claims`: what the CRD schemas leave to
 * the webhook (shared/api/schema-edits.ts), one clear message per mistake. Whether the pool exists
 * is not checked: a claim may come before its pool.
 * @module
 */
import type { AdmissionRequest, VirtualMachinePool } from '../../api/index.js';
import { VirtualMachineClaim, claimCelMessages, parseWith } from '../../api/index.js';
import { canonicalJson, parseDuration } from '../formats/index.js';
import type { Verdict } from './admission.js';
import type { Violation } from './validation.js';

/** The resource of claims in an AdmissionReview. */
export const CLAIM_RESOURCE = 'virtualmachineclaims';

/** The message of a Go duration of zero where a lifetime is asked for (after the field's path). */
export const POSITIVE_DURATION_MESSAGE = 'must be a positive Go duration such as 30m or 2h';

const ADMIT: Verdict = { allowed: true };
const refuse = (message: string): Verdict => ({ allowed: false, code: 422, message });

const specOf = (o: unknown): unknown =>
  typeof o === 'object' && o !== null ? (o as { spec?: unknown }).spec : undefined;

/**
 * A claim CREATE or UPDATE: the spec must parse (the models' messages name the field: `spec.ttl:
 * must be a Go duration such as 30m or 2h`), a ttl must be positive, and an update must keep
 * `spec.poolName`. An update that leaves the spec as it was is admitted unread, so metadata
 * writes (labels, the garbage collector's ownerReferences) never depend on the spec.
 */
export function admitClaim(req: AdmissionRequest): Verdict {
  if ((req.subResource ?? '') !== '') return ADMIT;
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return ADMIT;
  const spec = specOf(req.object);
  const oldSpec = req.operation === 'UPDATE' ? specOf(req.oldObject) : undefined;
  if (oldSpec !== undefined && canonicalJson(oldSpec) === canonicalJson(spec)) return ADMIT;
  const claim = parseWith(VirtualMachineClaim, req.object);
  if (!claim.ok) return refuse(claim.message);
  const { poolName, ttl } = claim.data.spec;
  const oldPool = (oldSpec as { poolName?: unknown } | undefined)?.poolName;
  if (oldSpec !== undefined && oldPool !== poolName)
    return refuse(claimCelMessages.poolNameImmutable);
  if (ttl !== undefined && !((parseDuration(ttl) ?? 0) > 0))
    return refuse(`spec.ttl: ${POSITIVE_DURATION_MESSAGE}`);
  return ADMIT;
}

/**
 * What the pool's schema and model leave of `spec.claims`: a `maxTTL` of zero would expire every
 * claim as it binds. (Its form, `onRelease` and a missing `maxReplicas` fail the pool's model with
 * the field's message; `minIdle <= maxReplicas` is the CRD's rule.)
 */
export function validateClaims(pool: VirtualMachinePool): Violation[] {
  const maxTTL = pool.spec.claims?.maxTTL;
  if (maxTTL === undefined || (parseDuration(maxTTL) ?? 0) > 0) return [];
  const field = 'spec.claims.maxTTL';
  return [{ field, message: `${field}: ${POSITIVE_DURATION_MESSAGE}` }];
}
