/**
 * The pool's status and conditions, with the reference's reasons and messages.
 * @module
 */
import type {
  Condition,
  Intent,
  PoolStatus,
  VirtualMachine,
  VirtualMachinePool,
} from '../api/index.js';
import { AWAITING_RESTART, keys } from '../api/index.js';
import { canonicalJson } from './hash.js';
import { conditionOf, isReady, isTerminating, selectorOf } from './membership.js';

/** Counts derived from the members. */
export interface Counts {
  readonly replicas: number;
  readonly ready: number;
  readonly updated: number;
  readonly restartPending: number;
  /** Non-Terminating members. */
  readonly live: number;
}

/** True while a member waits for a restart to apply its patched spec. */
export function awaitingRestart(vm: VirtualMachine): boolean {
  return conditionOf(vm, AWAITING_RESTART)?.status === 'True';
}

/** Counts as the reference computes them (Terminating members only in `replicas`). */
export function countMembers(members: readonly VirtualMachine[], hash: string): Counts {
  const live = members.filter((m) => !isTerminating(m));
  return {
    replicas: members.length,
    ready: live.filter(isReady).length,
    updated: live.filter((m) => m.metadata.labels?.[keys.templateHash] === hash).length,
    restartPending: live.filter(
      (m) => m.metadata.annotations?.[keys.patchedTemplateHash] === hash && awaitingRestart(m),
    ).length,
    live: live.length,
  };
}

/** RFC 3339, second precision, UTC: how Kubernetes writes times. */
export function rfc3339(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** What the count decided that status reports beyond the members' own state. */
export interface Leaving {
  /** Surplus kept because only protected members could leave. */
  readonly protectedHeld: number;
  /** Leaving members draining. */
  readonly draining: number;
}

const NOT_LEAVING: Leaving = { protectedHeld: 0, draining: 0 };

function progressing(desired: number, c: Counts, l: Leaving): Condition | undefined {
  if (l.protectedHeld > 0)
    return {
      type: 'Progressing',
      status: 'False',
      reason: 'ScaleDownBlockedByProtection',
      message: `Scale-down to ${desired} replicas waits: ${l.protectedHeld} surplus replicas are protected (annotation ${keys.protected}: "true").`,
    };
  if (c.replicas === desired) return undefined;
  const draining = l.draining > 0 ? `, ${l.draining} draining` : '';
  return {
    type: 'Progressing',
    status: 'True',
    reason: 'ReplicasProgressing',
    message: `Converging to ${desired} replicas (currently ${c.replicas}${draining}).`,
  };
}

function conditions(
  desired: number,
  c: Counts,
  l: Leaving,
  generation: number | undefined,
): Condition[] {
  const out: Condition[] = [];
  out.push(
    c.ready >= desired
      ? { type: 'Available', status: 'True', reason: 'AllReplicasReady', message: '' }
      : {
          type: 'Available',
          status: 'False',
          reason: 'InsufficientReadyReplicas',
          message: `Only ${c.ready} of ${desired} replicas are ready.`,
        },
  );
  const moving = progressing(desired, c, l);
  if (moving !== undefined) out.push(moving);
  if (c.updated >= c.live) {
    out.push({ type: 'Synced', status: 'True', reason: 'PoolSynced', message: '' });
  } else if (c.restartPending > 0) {
    out.push({
      type: 'Synced',
      status: 'False',
      reason: 'RestartPendingApproval',
      message: `${c.restartPending} of ${c.live} replicas await a restart to apply configuration.`,
    });
  } else {
    out.push({
      type: 'Synced',
      status: 'False',
      reason: 'RolloutInProgress',
      message: `${c.updated} of ${c.live} replicas are on the current virtualMachineTemplate.`,
    });
  }
  return generation === undefined
    ? out
    : out.map((x) => ({ ...x, observedGeneration: generation }));
}

/** Keeps a condition's lastTransitionTime unless its status flipped (SetStatusCondition semantics). */
function withTransitions(next: Condition[], prev: readonly Condition[], now: Date): Condition[] {
  return next.map((c) => {
    const old = prev.find((p) => p.type === c.type);
    const since = old?.status === c.status ? old.lastTransitionTime : undefined;
    return { ...c, lastTransitionTime: since ?? rfc3339(now) };
  });
}

/** An intent with empty lists dropped, or undefined when nothing is pending. */
export function normalizeIntent(intent: Intent): Intent | undefined {
  const out: Intent = {};
  if (intent.creates?.length) out.creates = [...intent.creates];
  if (intent.deletes?.length) out.deletes = [...intent.deletes];
  if (intent.bindings?.length) out.bindings = [...intent.bindings];
  return Object.keys(out).length === 0 ? undefined : out;
}

/** The status a pool should have, given its members, its template revision and the intent. */
export function computeStatus(
  pool: VirtualMachinePool,
  members: readonly VirtualMachine[],
  hash: string,
  intent: Intent,
  now: Date,
  leaving: Leaving = NOT_LEAVING,
): PoolStatus {
  const desired = pool.spec.replicas ?? 0;
  const c = countMembers(members, hash);
  const prev = pool.status ?? {};
  const status: PoolStatus = {
    ...prev,
    observedGeneration: pool.metadata.generation,
    replicas: c.replicas,
    readyReplicas: c.ready,
    updatedReplicas: c.updated,
    restartPendingReplicas: c.restartPending,
    protectedReplicas: leaving.protectedHeld,
    drainingReplicas: leaving.draining,
    desiredTemplateHash: hash,
    selector: selectorOf(pool),
    conditions: withTransitions(
      conditions(desired, c, leaving, pool.metadata.generation),
      prev.conditions ?? [],
      now,
    ),
  };
  const normalized = normalizeIntent(intent);
  if (normalized === undefined) delete status.intent;
  else status.intent = normalized;
  if (status.observedGeneration === undefined) delete status.observedGeneration;
  return status;
}

/** True when two statuses are the same document (so writing would change nothing). */
export function sameStatus(a: PoolStatus | undefined, b: PoolStatus | undefined): boolean {
  return canonicalJson(a ?? {}) === canonicalJson(b ?? {});
}
