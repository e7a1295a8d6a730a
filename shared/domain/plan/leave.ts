/**
 * A plan step after replace: how each leaving member leaves. Without `spec.scaleDown.drainTimeout`
 * it is deleted at once, as the reference does; with one it is asked to drain first and deleted
 * once drained or timed out, counting as a member (and as draining) until then.
 * @module
 */
import type { DeleteVm, UpdateVm } from './actions.js';
import { resourceVersionOf } from './actions.js';
import type { Departure } from './count.js';
import type { DrainStep } from '../fleet/index.js';
import { drainStep, drainTimeoutMs, requestDrain, nameOf } from '../fleet/index.js';
import type { VirtualMachinePool } from '../../api/index.js';

/** The leaving decisions of one plan. */
export interface Leave {
  /** Member deletions, victims before targets. */
  readonly deletes: readonly DeleteVm[];
  /** Drain requests (annotation updates, fenced like deletes). */
  readonly drainRequests: readonly UpdateVm[];
  /** Leaving members that drain after this plan (`status.drainingReplicas`). */
  readonly draining: number;
  /** The earliest drain deadline still ahead: a reconcile is due then. */
  readonly recheckAt?: Date;
}

/** What the leave step reads. */
export interface LeaveInput {
  readonly pool: VirtualMachinePool;
  /** Members that leave: the count's departures and the replicas' replacements. */
  readonly departures: readonly Departure[];
  readonly now: Date;
}

/**
 * Decides how leaving members leave (pure; `now` dates drain requests and timeouts). An unhealthy
 * member is deleted at once: it is not running anything to drain.
 */
export function decideLeave(input: Readonly<LeaveInput>): Leave {
  const { pool, departures, now } = input;
  const timeoutMs = drainTimeoutMs(pool);
  const timeout = pool.spec.scaleDown?.drainTimeout ?? '';
  const deletes: DeleteVm[] = [];
  const drainRequests: UpdateVm[] = [];
  let draining = 0;
  let recheckAt: Date | undefined;
  const due = (at: Date): void => {
    if (recheckAt === undefined || at < recheckAt) recheckAt = at;
  };
  const maxAge = pool.spec.maxMemberAge ?? '';
  for (const d of departures) {
    const remove: DeleteVm = {
      kind: 'deleteVm',
      name: nameOf(d.vm),
      uid: d.uid,
      ...resourceVersionOf(d.vm),
      why: d.why,
      ...(d.why === 'expired' ? { maxAge } : {}),
    };
    const step: DrainStep =
      d.why === 'unhealthy' ? { kind: 'delete', drained: false } : drainStep(d.vm, timeoutMs, now);
    switch (step.kind) {
      case 'delete':
        deletes.push(step.drained ? { ...remove, drain: { outcome: 'drained', timeout } } : remove);
        break;
      case 'timedOut':
        deletes.push({ ...remove, drain: { outcome: 'timedOut', timeout } });
        break;
      case 'request':
        draining++;
        drainRequests.push({
          kind: 'updateVm',
          vm: requestDrain(d.vm, now),
          why: ['drainRequest'],
          drainTimeout: timeout,
        });
        due(new Date(now.getTime() + (timeoutMs ?? 0)));
        break;
      case 'wait':
        draining++;
        due(step.deadline);
        break;
    }
  }
  return recheckAt === undefined
    ? { deletes, drainRequests, draining }
    : { deletes, drainRequests, draining, recheckAt };
}
