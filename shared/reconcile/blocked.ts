/**
 * Failing closed (DESIGN §7): after the fencing write, check the stored pool kept the intent; after
 * a refused write, say so. Either way the pool gets `Synced=False` with the cause and the fix, an
 * Event says the same once, and the reconcile stops without creating or deleting anything more.
 * @module
 */
import type { Logger } from 'pino';
import type { Malformed, PoolStatus, VirtualMachinePool } from '../api/index.js';
import {
  FORBIDDEN,
  INTENT_NOT_PERSISTED,
  INTENT_NOT_PERSISTED_MESSAGE,
  MALFORMED_MEMBER,
  blockedStatus,
  forbiddenMessage,
  intentPersisted,
  malformedMessage,
  refusedByRbac,
} from '../domain/index.js';
import type { Failure, Kube } from '../kube/index.js';
import { NO_HTTP_STATUS } from '../kube/index.js';

/** What blocking a pool needs: the funnel, the clock, the log. */
export interface BlockDeps {
  readonly kube: Kube;
  readonly now: () => Date;
  readonly log: Logger;
}

/** A reconcile that stopped on purpose; `failures` say why. */
export interface Blocked {
  readonly kind: 'failed';
  readonly failures: Failure[];
}

/** Writes `Synced=False` (when not already so) and one Warning Event; best effort, logged. */
async function block(
  deps: BlockDeps,
  pool: VirtualMachinePool,
  reason: string,
  message: string,
): Promise<void> {
  const status = blockedStatus(pool, reason, message, deps.now());
  if (status === undefined) return;
  const wrote = await deps.kube.updatePoolStatus({ ...pool, status });
  if (!wrote.ok) {
    deps.log.warn(
      { pool: `${pool.metadata.namespace ?? ''}/${pool.metadata.name ?? ''}`, err: wrote.message },
      `cannot record Synced=False ${reason} on the pool`,
    );
    return;
  }
  await deps.kube.recordEvent(wrote.value, {
    type: 'Warning',
    reason,
    note: message,
    action: 'Reconcile',
  });
}

/**
 * After a status write that recorded intent: undefined when the stored pool carries it; otherwise
 * the pool is blocked ({@link INTENT_NOT_PERSISTED}) and the reconcile must stop here.
 * @param stored the pool as the API server returned it from the write
 * @param written the status that was sent
 */
export async function failClosedUnlessPersisted(
  deps: BlockDeps,
  stored: VirtualMachinePool,
  written: PoolStatus,
): Promise<Blocked | undefined> {
  if (intentPersisted(written, stored.status)) return undefined;
  deps.log.error(
    { pool: `${stored.metadata.namespace ?? ''}/${stored.metadata.name ?? ''}` },
    `intent not persisted, nothing created or deleted: ${INTENT_NOT_PERSISTED_MESSAGE}`,
  );
  await block(deps, stored, INTENT_NOT_PERSISTED, INTENT_NOT_PERSISTED_MESSAGE);
  return {
    kind: 'failed',
    failures: [
      {
        ok: false,
        reason: 'invalid',
        code: NO_HTTP_STATUS,
        message: INTENT_NOT_PERSISTED_MESSAGE,
      },
    ],
  };
}

/**
 * After actions the API server refused: with a 403 among them the pool is blocked ({@link FORBIDDEN})
 * and the refusal logged as the missing grant it is, instead of being retried pass after pass.
 */
export async function reportRefused(
  deps: BlockDeps,
  pool: VirtualMachinePool,
  failures: Failure[],
): Promise<Blocked> {
  // A 403 of admission (a quota, a policy) refuses the object, not vmpool: its Event says so, and
  // blaming a missing grant would send the operator the wrong way.
  const refused = failures.find((f) => f.reason === 'forbidden' && refusedByRbac(f.message));
  if (refused !== undefined) {
    const message = forbiddenMessage('reconcile-pool', refused.message);
    deps.log.error(
      {
        pool: `${pool.metadata.namespace ?? ''}/${pool.metadata.name ?? ''}`,
        err: refused.message,
      },
      `forbidden: ${message}`,
    );
    await block(deps, pool, FORBIDDEN, message);
  }
  return { kind: 'failed', failures };
}

/**
 * A pool that objects which do not parse claim ({@link MALFORMED_MEMBER}): blocked, with the first
 * object and its issue in the condition and the Event, and nothing created or deleted, since a
 * member vmpool cannot see could make any count wrong. The objects themselves were logged once by
 * the funnel; the pool returns to normal on the first reconcile after they are fixed or gone.
 */
export async function blockMalformed(
  deps: BlockDeps,
  pool: VirtualMachinePool,
  items: readonly Malformed[],
): Promise<Blocked> {
  const message = malformedMessage(items);
  await block(deps, pool, MALFORMED_MEMBER, message);
  return {
    kind: 'failed',
    failures: [{ ok: false, reason: 'invalid', code: NO_HTTP_STATUS, message }],
  };
}
