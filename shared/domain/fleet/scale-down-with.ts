/**
 * scaledownwith: validate every named target, dedupe, and lower `spec.replicas` by the number of
 * distinct targets together with recording them — one write, all or nothing.
 * @module
 */
import type {
  RecordedTarget,
  ScaleDownWithBody,
  VirtualMachine,
  VirtualMachinePool,
} from '../../api/index.js';
import { keys } from '../../api/index.js';
import { claimOf } from './claimed.js';
import { isStandby } from './lifecycle.js';
import { isMember, isTerminating, nameOf } from './membership.js';
import { isProtected } from './victims.js';
import { recordedRequests, recordedTargets, withRequest, withTargets } from './targets.js';

/** What happens to one named target. */
export type TargetOutcome =
  /** A live member: recorded, and the pool shrinks by one for it. */
  | 'removed'
  /**
   * Already asked to leave (recorded by an earlier scaledownwith, or a scale-down victim still
   * draining): neither recorded nor counted again.
   */
  | 'alreadyRequested'
  /** Already being deleted: not counted, so the pool neither shrinks for it nor deletes another. */
  | 'alreadyTerminating'
  /** Named again in the same request: counted once. */
  | 'duplicate'
  /** The same request (by its key) was carried out before: nothing is done again. */
  | 'alreadyDone';

/** A refused request: HTTP code and the reference's message. */
export interface Refusal {
  readonly ok: false;
  readonly code: 400 | 404 | 409;
  readonly message: string;
}

/** An accepted request. */
export interface Accepted {
  readonly ok: true;
  readonly dryRun: boolean;
  readonly outcomes: ReadonlyArray<{ readonly target: string; readonly outcome: TargetOutcome }>;
  /** The pool to write (replicas lowered, targets recorded); undefined when nothing changes. */
  readonly write: VirtualMachinePool | undefined;
  readonly replicas: { readonly from: number; readonly to: number };
  /** The request's key is recorded on the pool: a redelivery of a request carried out before. */
  readonly replay: boolean;
}

/** The reference's message for an empty target list. */
export const EMPTY_TARGETS = 'scaleDownWith requires a non-empty targets list';

/**
 * Plans a scaledownwith. `vms` maps each distinct target name to the VM read for it (absent: not
 * found). Nothing is written for a refused request: a paused pool (409), a target that is not a
 * member or is a standby member (400), or that is protected or claimed (409). A `request` key (see
 * {@link requestKey}) is recorded with the write, and a request whose key is recorded is answered as
 * done without looking at its targets, which may be long gone.
 */
export function planScaleDownWith(
  pool: VirtualMachinePool,
  body: ScaleDownWithBody,
  vms: ReadonlyMap<string, VirtualMachine>,
  request?: string,
): Refusal | Accepted {
  if (body.targets.length === 0) return { ok: false, code: 400, message: EMPTY_TARGETS };
  const dry = body.dryRun ?? [];
  const unknownDry = dry.find((d) => d !== 'All');
  if (unknownDry !== undefined)
    return {
      ok: false,
      code: 400,
      message: `unsupported dryRun value "${unknownDry}": only "All" is allowed`,
    };
  const dryRun = dry.includes('All');
  const from = pool.spec.replicas ?? 0;
  if (request !== undefined && recordedRequests(pool).includes(request))
    return {
      ok: true,
      dryRun,
      outcomes: body.targets.map((target) => ({ target, outcome: 'alreadyDone' })),
      write: undefined,
      replicas: { from, to: from },
      replay: true,
    };
  if (pool.spec.paused === true)
    return {
      ok: false,
      code: 409,
      message: `VirtualMachinePool "${nameOf(pool)}" is paused (spec.paused: true): nothing is removed until it is unpaused`,
    };
  const ns = pool.metadata.namespace ?? '';
  for (const t of body.targets) {
    const vm = vms.get(t);
    if (vm === undefined)
      return {
        ok: false,
        code: 400,
        message: `target VirtualMachine "${t}" not found in namespace "${ns}"`,
      };
    if (!isMember(pool, vm))
      return {
        ok: false,
        code: 400,
        message: `target VirtualMachine "${t}" does not belong to VirtualMachinePool "${nameOf(pool)}"`,
      };
    if (isStandby(vm) && !isTerminating(vm))
      return {
        ok: false,
        code: 400,
        message: `target VirtualMachine "${t}" is a standby member of VirtualMachinePool "${nameOf(pool)}", not a replica; lower spec.standby.replicas to remove standby members`,
      };
    if (isProtected(vm) && !isTerminating(vm))
      return {
        ok: false,
        code: 409,
        message: `target VirtualMachine "${t}" is protected from scale-down (annotation ${keys.protected}: "true"); remove the annotation first`,
      };
    // A binding recorded but not carried out yet takes the member as surely as the marks do.
    const recorded = pool.status?.intent?.claims?.find((c) => c.vmUid === vm.metadata.uid);
    const claim = isTerminating(vm) ? undefined : (claimOf(vm)?.name ?? recorded?.claim);
    if (claim !== undefined)
      return {
        ok: false,
        code: 409,
        message: `target VirtualMachine "${t}" is claimed by VirtualMachineClaim "${claim}"; it leaves when the claim is released (delete the claim)`,
      };
  }
  const already = new Set(
    [...recordedTargets(pool), ...(pool.status?.intent?.deletes ?? [])].map((t) => t.uid),
  );
  const seen = new Set<string>();
  const added: RecordedTarget[] = [];
  const outcomes = body.targets.map((target) => {
    const vm = vms.get(target);
    const uid = vm?.metadata.uid ?? '';
    let outcome: TargetOutcome;
    if (seen.has(target)) outcome = 'duplicate';
    else if (vm === undefined || isTerminating(vm)) outcome = 'alreadyTerminating';
    else if (already.has(uid)) outcome = 'alreadyRequested';
    else {
      outcome = 'removed';
      added.push({ name: target, uid });
    }
    seen.add(target);
    return { target, outcome };
  });
  const to = Math.max(0, from - added.length);
  let write =
    added.length === 0
      ? undefined
      : withTargets({ ...pool, spec: { ...pool.spec, replicas: to } }, [
          ...recordedTargets(pool),
          ...added,
        ]);
  // Even a request with nothing to remove is remembered: its redelivery may find the targets gone.
  if (request !== undefined && !dryRun) write = withRequest(write ?? pool, request);
  return { ok: true, dryRun, outcomes, write, replicas: { from, to }, replay: false };
}
