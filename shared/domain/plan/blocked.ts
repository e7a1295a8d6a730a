/**
 * A pool vmpool must not act on (DESIGN §7, fail closed): its recorded intent would not persist, or
 * the API server refuses vmpool's own writes. The `Synced` condition says why and what fixes it.
 * @module
 */
import type { Condition, PoolStatus, VirtualMachinePool } from '../../api/index.js';
import { canonicalJson } from '../formats/index.js';
import { MALFORMED_MEMBER } from './malformed.js';
import { rfc3339 } from '../formats/index.js';
import { normalizeIntent } from './status.js';

/** `Synced=False` reason: the served pool CRD drops `status.intent`, so nothing is fenced. */
export const INTENT_NOT_PERSISTED = 'IntentNotPersisted';
/** `Synced=False` reason: the API server refused one of vmpool's writes (RBAC, admission). */
export const FORBIDDEN = 'Forbidden';

const BLOCKING: ReadonlySet<string> = new Set([INTENT_NOT_PERSISTED, FORBIDDEN, MALFORMED_MEMBER]);

/** The message of {@link INTENT_NOT_PERSISTED}: the cause and the fix. */
export const INTENT_NOT_PERSISTED_MESSAGE =
  "The API server stored this pool's status without status.intent: the served VirtualMachinePool CRD prunes it (most likely the virtualization platform's own CRD, not vmpool's). Without recorded intent vmpool cannot fence creates and deletes against over-creation, so it creates and deletes nothing. Fix: disable the platform's pool controller, then install vmpool's CRD (npm start -- --take-over, or kubectl apply --server-side --force-conflicts -f knative/crd/crd.yaml); or stop vmpool.";

/** The message of {@link FORBIDDEN} for the API server's refusal `refusal`. */
export function forbiddenMessage(fn: string, refusal: string): string {
  return `The API server refused a write of ${fn}: ${refusal}. Grant what is missing to the ${fn} ServiceAccount (knative/base/rbac.yaml lists what each function needs); vmpool retries on the next event.`;
}

/**
 * True when an API server refusal is about the caller's own grants (the RBAC authorizer's `User "…"
 * cannot <verb> resource …`, or OwnerReferencesPermissionEnforcement's blockOwnerDeletion check),
 * as opposed to an admission webhook refusing the object itself, which may also answer 403.
 */
export function refusedByRbac(message: string): boolean {
  return (
    /User "[^"]*" cannot [a-z]+ resource/.test(message) ||
    /cannot set blockOwnerDeletion/.test(message)
  );
}

/** True when `stored` carries the intent `written` recorded (trivially so when none was recorded). */
export function intentPersisted(written: PoolStatus, stored: PoolStatus | undefined): boolean {
  const want = normalizeIntent(written.intent ?? {});
  if (want === undefined) return true;
  return canonicalJson(want) === canonicalJson(normalizeIntent(stored?.intent ?? {}) ?? {});
}

/** The stored `Synced=False` condition with a blocking reason, if the pool has one. */
export function blockingCondition(status: PoolStatus | undefined): Condition | undefined {
  return status?.conditions?.find(
    (c) => c.type === 'Synced' && c.status === 'False' && BLOCKING.has(c.reason ?? ''),
  );
}

/**
 * The pool's status with `Synced=False` for `reason`, everything else as stored; undefined when the
 * stored status is already blocked for that reason. The message is not compared: a refusal names
 * the object refused, which differs from pass to pass, and every rewrite would be a watch event and
 * so another reconcile that is refused again.
 */
export function blockedStatus(
  pool: VirtualMachinePool,
  reason: string,
  message: string,
  now: Date,
): PoolStatus | undefined {
  const status = pool.status ?? {};
  const prev = status.conditions?.find((c) => c.type === 'Synced');
  if (prev?.status === 'False' && prev.reason === reason) return undefined;
  const synced: Condition = {
    type: 'Synced',
    status: 'False',
    reason,
    message,
    lastTransitionTime:
      prev?.status === 'False' && prev.lastTransitionTime !== undefined
        ? prev.lastTransitionTime
        : rfc3339(now),
    ...(pool.metadata.generation === undefined
      ? {}
      : { observedGeneration: pool.metadata.generation }),
  };
  const others = (status.conditions ?? []).filter((c) => c.type !== 'Synced');
  return { ...status, conditions: [...others, synced] };
}

/**
 * Keeps a blocking `Synced=False` of the stored status in the status a plan wants to write, while
 * the plan still has something to do. Without this every pass would write `Synced` back and forth:
 * each write is a watch event, and each event another reconcile, so the loop would never end. Once
 * the plan has nothing to do (the block is gone and the work done), the plan's condition returns.
 */
export function holdBlocked(
  stored: PoolStatus | undefined,
  next: PoolStatus,
  acting: boolean,
): PoolStatus {
  const held = blockingCondition(stored);
  if (!acting || held === undefined) return next;
  return {
    ...next,
    conditions: (next.conditions ?? []).map((c) =>
      c.type === 'Synced'
        ? {
            ...held,
            ...(c.observedGeneration === undefined
              ? {}
              : { observedGeneration: c.observedGeneration }),
          }
        : c,
    ),
  };
}
