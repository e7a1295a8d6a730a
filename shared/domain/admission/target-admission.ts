/**
 * Admission of scaledownwith targets written into a pool's annotation. The annotation is an order to
 * delete named members (and, under Explicit, what lets `spec.replicas` drop), so a target may be
 * added only by scale-down-with, and only for a current, live member named by name and uid: a
 * made-up uid would leave an Explicit pool oversized forever, a real one would give named removal
 * without the `create` grant on scaledownwith.
 * @module
 */
import type {
  AdmissionRequest,
  RecordedTarget,
  VirtualMachine,
  VirtualMachinePool,
} from '../../api/index.js';
import { MAX_TARGETS, VirtualMachinePool as PoolModel, keys, parseWith } from '../../api/index.js';
import type { AdmissionStep, CallOutcome } from './admission.js';
import { admitRequest, explicitReplicasMessage } from './admission.js';
import { forbiddenMessage, refusedByRbac } from '../plan/index.js';
import { isStandby, isMember, isTerminating, recordedTargets } from '../fleet/index.js';

/**
 * Who may add targets: the username the API server reports for scale-down-with's writes, or
 * `undefined` when any writer may (membership is still checked).
 */
export interface TargetWriters {
  readonly recorder: string | undefined;
}

/** The ServiceAccount knative/base runs scale-down-with as (serviceaccounts.yaml, rbac.yaml). */
export const DEFAULT_RECORDER = 'system:serviceaccount:vmpool-system:scale-down-with';

/** The value of the recorder setting that lets any writer add targets. */
export const ANY_RECORDER = '*';

/** The recorder setting as configured (unset: {@link DEFAULT_RECORDER}; `*`: anyone). */
export function targetWriters(setting: string | undefined): TargetWriters {
  const s = setting?.trim() ?? '';
  if (s === ANY_RECORDER) return { recorder: undefined };
  return { recorder: s === '' ? DEFAULT_RECORDER : s };
}

/** Targets in `pool`'s annotation that `old`'s does not hold (same name and uid), deduplicated. */
export function addedTargets(
  pool: VirtualMachinePool,
  old: VirtualMachinePool | undefined,
): RecordedTarget[] {
  const key = (t: RecordedTarget): string => `${t.name}\u0000${t.uid}`;
  const before = new Set(old === undefined ? [] : recordedTargets(old).map(key));
  const added = new Map<string, RecordedTarget>();
  for (const t of recordedTargets(pool)) if (!before.has(key(t))) added.set(key(t), t);
  return [...added.values()];
}

/**
 * Why the writer may not add `added` at all, before any member is read (undefined: it may): only
 * the recorder may, only to an existing pool, and at most as many as one scaledownwith names.
 */
export function writerProblem(
  old: VirtualMachinePool | undefined,
  added: readonly RecordedTarget[],
  username: string | undefined,
  writers: TargetWriters,
): string | undefined {
  if (added.length === 0) return undefined;
  if (writers.recorder !== undefined && username !== writers.recorder)
    return `targets may be added only by ${writers.recorder}, not by ${username ?? '(unknown user)'}`;
  if (old === undefined) return 'a new pool has no members to name';
  if (added.length > MAX_TARGETS) return `one write may add at most ${String(MAX_TARGETS)} targets`;
  return undefined;
}

/**
 * Why an added target is not a current, live replica of the pool by name and uid (undefined: every
 * one is). `vms` maps each added target's name to the VM read for it (absent: not found).
 */
export function memberProblem(
  pool: VirtualMachinePool,
  added: readonly RecordedTarget[],
  vms: ReadonlyMap<string, VirtualMachine>,
): string | undefined {
  const ns = pool.metadata.namespace ?? '';
  for (const t of added) {
    const vm = vms.get(t.name);
    if (vm === undefined) return `target "${t.name}" is not a VirtualMachine in namespace "${ns}"`;
    if (vm.metadata.uid !== t.uid)
      return `target "${t.name}" has uid ${vm.metadata.uid ?? '(none)'}, not ${t.uid}`;
    if (!isMember(pool, vm)) return `target "${t.name}" is not a member of the pool`;
    if (isTerminating(vm)) return `target "${t.name}" is already being deleted`;
    if (isStandby(vm)) return `target "${t.name}" is a standby member, not a replica`;
  }
  return undefined;
}

/**
 * The refusal of an added target (`why` names it): under Explicit a decrease it was to cover is an
 * unaddressed one, so the Explicit message; otherwise the annotation itself is refused.
 */
export function forgedTargetMessage(
  pool: VirtualMachinePool,
  old: VirtualMachinePool | undefined,
  why: string,
): string {
  const name = pool.metadata.name ?? '';
  const decrease = (old?.spec.replicas ?? 0) > (pool.spec.replicas ?? 0);
  if (old !== undefined && decrease && pool.spec.scaleDownPolicy === 'Explicit')
    return `${explicitReplicasMessage(name)} Not a scaleDownWith target: ${why}.`;
  return `VirtualMachinePool "${name}": annotation ${keys.scaleDownTargets} is written only by the scaleDownWith subresource, and ${why}. Remove specific virtual machines with the scaleDownWith subresource instead.`;
}

/** Read the VMs named by targets added to the annotation, then take `next` if they are replicas. */
export interface ReadTargets {
  readonly kind: 'readTargets';
  readonly namespace: string;
  readonly pool: VirtualMachinePool;
  readonly old: VirtualMachinePool;
  readonly targets: readonly RecordedTarget[];
  readonly next: AdmissionStep;
}

/** A step of admission, targets included. */
export type ReviewStep = AdmissionStep | ReadTargets;

const refusal = (code: number, message: string): AdmissionStep => ({
  kind: 'verdict',
  verdict: { allowed: false, code, message },
});

/**
 * The first step of admitting a request (pure): {@link admitRequest}, and before whatever it goes on
 * to, the targets a pool write adds to the annotation: refused outright for another writer, else
 * read to check they are the pool's live replicas.
 */
export function admitWithTargets(req: AdmissionRequest, writers: TargetWriters): ReviewStep {
  const step = admitRequest(req);
  if (step.kind === 'verdict' && !step.verdict.allowed) return step;
  if (step.kind === 'readPool' || (req.subResource ?? '') !== '') return step;
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return step;
  if (req.resource.resource !== 'virtualmachinepools') return step;
  // admitRequest parsed both already (or refused): these parse.
  const pool = parseWith(PoolModel, req.object);
  const old = req.operation === 'UPDATE' ? parseWith(PoolModel, req.oldObject) : undefined;
  if (!pool.ok || (old !== undefined && !old.ok)) return step;
  const before = old?.data;
  const added = addedTargets(pool.data, before);
  if (added.length === 0) return step;
  const problem = writerProblem(before, added, req.userInfo?.username, writers);
  if (problem !== undefined || before === undefined)
    return refusal(403, forgedTargetMessage(pool.data, before, problem ?? 'no pool to name'));
  const namespace = pool.data.metadata.namespace ?? req.namespace ?? '';
  return {
    kind: 'readTargets',
    namespace,
    pool: pool.data,
    old: before,
    targets: added,
    next: step,
  };
}

/**
 * The step after the added targets were read (`vms`: each name to its VM, absent when not found):
 * on to `next` only when every one is a live replica of the pool by name and uid.
 */
export function afterTargetsRead(
  got: CallOutcome<ReadonlyMap<string, VirtualMachine>>,
  step: ReadTargets,
): AdmissionStep {
  if (!got.ok) {
    const why =
      got.reason === 'forbidden' && refusedByRbac(got.message)
        ? forbiddenMessage('scale-validate', got.message)
        : got.message;
    return refusal(
      500,
      `cannot read the scaleDownWith targets of VirtualMachinePool "${step.pool.metadata.name ?? ''}": ${why}`,
    );
  }
  const problem = memberProblem(step.pool, step.targets, got.value);
  return problem === undefined
    ? step.next
    : refusal(403, forgedTargetMessage(step.pool, step.old, problem));
}
