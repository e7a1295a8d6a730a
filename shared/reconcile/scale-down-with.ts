/**
 * Carrying out a scaledownwith: read the pool and every distinct target, plan, then one write
 * conditioned on the pool's resourceVersion; a lost race re-reads and re-plans.
 * @module
 */
import type {
  ScaleDownWithBody,
  VirtualMachine,
  VirtualMachinePool,
  Status,
} from '../api/index.js';
import {
  EMPTY_TARGETS,
  forbiddenMessage,
  invalidObjectKey,
  isDnsSubdomain,
  isMember,
  planScaleDownWith,
  recordedRequests,
  refusedByRbac,
} from '../domain/index.js';
import { poolNotFound, statusFailure, statusSuccess } from '../api/index.js';
import type { Failure, Kube } from '../kube/index.js';

/** A 500 for a failed call of scale-down-with itself, naming the missing grant when it was RBAC. */
function ownFailure(f: Failure, name: string): Status {
  return statusFailure(
    500,
    f.reason === 'forbidden' && refusedByRbac(f.message)
      ? forbiddenMessage('scale-down-with', f.message)
      : f.message,
    name,
  );
}

/** Target reads in flight at once: a request of many targets must not flood the API server. */
export const TARGET_READS = 8;

/** How a scaledownwith is carried out. */
export interface ScaleDownWithOptions {
  /** The key of a delivered request (see `requestKey`): recorded, and a redelivery answered as done. */
  readonly request?: string;
  /** Re-reads after a lost race; default 5. */
  readonly attempts?: number;
}

/** Removes the named replicas of a pool atomically; answers with a Status (201 on success). */
export async function scaleDownWith(
  kube: Kube,
  namespace: string,
  name: string,
  body: ScaleDownWithBody,
  { request, attempts = 5 }: ScaleDownWithOptions = {},
): Promise<Status> {
  // The request is judged before anything is read, as the reference does: an empty list is a 400
  // even for a pool that does not exist, and costs no API call.
  const bad = invalidObjectKey(namespace, name);
  if (bad !== undefined) return statusFailure(400, bad, name);
  if (body.targets.length === 0) return statusFailure(400, EMPTY_TARGETS, name);
  // A name the API server cannot even look up is the caller's mistake (400), not ours (500).
  const malformed = body.targets.find((t) => !isDnsSubdomain(t));
  if (malformed !== undefined)
    return statusFailure(400, `target "${malformed}" is not a valid VirtualMachine name`, name);
  const seen = new Map<string, VirtualMachine>();
  for (let i = 0; i < attempts; i++) {
    const got = await kube.getPool(namespace, name);
    if (!got.ok) return got.reason === 'notFound' ? poolNotFound(name) : ownFailure(got, name);
    const pool = got.value;
    // A redelivery of a request carried out before is answered from the pool alone.
    const replay = request !== undefined && recordedRequests(pool).includes(request);
    const read = replay
      ? { vms: new Map<string, VirtualMachine>(), judged: undefined }
      : await readTargets(kube, pool, body.targets, seen);
    if ('failed' in read) return read.failed;
    const { vms, judged } = read;
    const targets = judged === undefined ? body.targets : body.targets.filter((t) => judged.has(t));
    const p = planScaleDownWith(pool, { ...body, targets }, vms, request);
    if (!p.ok) return statusFailure(p.code, p.message, name);
    const causes = p.outcomes.map((o) => ({
      reason: o.outcome,
      field: o.target,
      message: `${o.target}: ${o.outcome}`,
    }));
    const done = (message: string): Status => statusSuccess(message, name, causes);
    const summary = `replicas ${p.replicas.from} -> ${p.replicas.to}`;
    if (p.replay) return done('already carried out: a redelivered request');
    if (p.dryRun) return done(`dry run: nothing changed (would set ${summary})`);
    const removes = p.outcomes.some((o) => o.outcome === 'removed');
    if (p.write === undefined) return done('nothing to remove');
    const wrote = await kube.updatePool(p.write);
    if (wrote.ok) return done(removes ? summary : 'nothing to remove');
    if (wrote.reason === 'conflict') continue;
    if (wrote.reason === 'notFound') return poolNotFound(name);
    // scale-down-with writes as its own ServiceAccount: a refused grant is a server error, not the
    // caller's 403.
    if (wrote.reason === 'forbidden' && refusedByRbac(wrote.message))
      return ownFailure(wrote, name);
    // The pool's own admission may refuse the write; its words are the caller's answer.
    return statusFailure(wrote.code === 0 ? 500 : wrote.code, wrote.message, name);
  }
  return statusFailure(409, `the pool kept changing; try again`, name);
}

/** A VM as Terminating: what a target read before and not found now has become. */
function gone(vm: VirtualMachine): VirtualMachine {
  return { ...vm, metadata: { ...vm.metadata, deletionTimestamp: new Date(0).toISOString() } };
}

/**
 * Reads the distinct targets, {@link TARGET_READS} at a time, and stops at the first that settles
 * the answer (not found, not a member, a failed read): a request naming one stranger among a
 * thousand costs a handful of reads, not a thousand. `judged` holds the targets read.
 */
async function readTargets(
  kube: Kube,
  pool: VirtualMachinePool,
  targets: readonly string[],
  seen: Map<string, VirtualMachine>,
): Promise<{ failed: Status } | { vms: Map<string, VirtualMachine>; judged: ReadonlySet<string> }> {
  const namespace = pool.metadata.namespace ?? '';
  const vms = new Map<string, VirtualMachine>();
  const judged = new Set<string>();
  const queue = [...new Set(targets)];
  let failed: Status | undefined;
  let stop = false;
  const worker = async (): Promise<void> => {
    for (let t = queue.shift(); t !== undefined && !stop; t = queue.shift()) {
      const vm = await kube.getVm(namespace, t);
      judged.add(t);
      if (vm.ok) {
        vms.set(t, vm.value);
        seen.set(t, vm.value);
        if (!isMember(pool, vm.value)) stop = true;
      } else if (vm.reason === 'notFound') {
        // A target that existed earlier in this request and vanished while we retried (our own
        // write may have landed and a reconcile removed it) is already gone, not unknown.
        const before = seen.get(t);
        if (before === undefined) stop = true;
        else vms.set(t, gone(before));
      } else {
        stop = true;
        const name = pool.metadata.name ?? '';
        failed ??=
          vm.reason === 'invalid' ? statusFailure(400, vm.message, name) : ownFailure(vm, name);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(TARGET_READS, queue.length) }, worker));
  return failed === undefined ? { vms, judged } : { failed };
}
