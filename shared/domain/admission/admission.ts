/**
 * Admission decisions for pools and their `/scale` subresource, pure: each step says what it needs
 * (an answer, a dry-run of the template's VM, a read of the pool) and the processor fetches it.
 * @module
 */
import type { AdmissionRequest, VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { VirtualMachinePool as PoolModel, Scale, parseWith } from '../../api/index.js';
import { forbiddenMessage, refusedByRbac } from '../plan/index.js';
import { canonicalJson } from '../formats/index.js';
import { vmFromTemplate, recordedTargets } from '../fleet/index.js';
import { sizeDecrease, validatePool } from './validation.js';
import { CLAIM_RESOURCE, admitClaim } from './claims.js';

/** The verdict of an admission check. */
export type Decision =
  { readonly allowed: true } | { readonly allowed: false; readonly message: string };

const ALLOW: Decision = { allowed: true };

/** The reference's denial of a `/scale` decrease under Explicit. */
export function explicitScaleMessage(pool: string): string {
  return `VirtualMachinePool "${pool}" uses scaleDownPolicy Explicit: decreasing replicas through the scale subresource is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.`;
}

/** The denial of an unaddressed `spec.replicas` decrease under Explicit (the reference allows it). */
export function explicitReplicasMessage(pool: string): string {
  return `VirtualMachinePool "${pool}" uses scaleDownPolicy Explicit: decreasing spec.replicas without naming the replicas to remove is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.`;
}

/** `/scale` UPDATE: a decrease is denied under Explicit; anything else is allowed. */
export function decideScaleUpdate(
  pool: VirtualMachinePool | undefined,
  oldReplicas: number,
  newReplicas: number,
): Decision {
  if (pool === undefined || newReplicas >= oldReplicas) return ALLOW;
  if (pool.spec.scaleDownPolicy !== 'Explicit') return ALLOW;
  return { allowed: false, message: explicitScaleMessage(pool.metadata.name ?? '') };
}

/**
 * Pool CREATE or UPDATE: the spec must be valid, and under Explicit a decrease of `spec.replicas` must
 * be covered by targets newly recorded by scaledownwith in the same write.
 */
export function decidePoolWrite(
  pool: VirtualMachinePool,
  old: VirtualMachinePool | undefined,
): Decision {
  const first = validatePool(pool)[0];
  if (first !== undefined) return { allowed: false, message: first.message };
  const shrunk = old === undefined ? undefined : sizeDecrease(pool, old);
  if (shrunk !== undefined) return { allowed: false, message: shrunk };
  if (old === undefined || pool.spec.scaleDownPolicy !== 'Explicit') return ALLOW;
  const decrease = (old.spec.replicas ?? 0) - (pool.spec.replicas ?? 0);
  if (decrease <= 0) return ALLOW;
  const before = new Set(recordedTargets(old).map((t) => t.uid));
  // Distinct members: one named twice covers one replica, not two.
  const added = new Set(
    recordedTargets(pool)
      .filter((t) => !before.has(t.uid))
      .map((t) => t.uid),
  ).size;
  return added >= decrease
    ? ALLOW
    : { allowed: false, message: explicitReplicasMessage(pool.metadata.name ?? '') };
}

/** An admission answer with the HTTP-like code the API server reports to the caller. */
export type Verdict = (
  | { readonly allowed: true }
  | { readonly allowed: false; readonly code: number; readonly message: string }
) & {
  /** Shown by kubectl as `Warning: …`; the write goes ahead if allowed. */
  readonly warnings?: readonly string[];
};

const ADMIT: Verdict = { allowed: true };

/** What admitting a request takes: an answer now, or one API call first. */
export type AdmissionStep =
  | { readonly kind: 'verdict'; readonly verdict: Verdict }
  /** Ask the VM API whether it accepts the VM the pool's template produces. */
  | { readonly kind: 'dryRunVm'; readonly namespace: string; readonly vm: VirtualMachine }
  /** Read the pool a `/scale` decrease is about. */
  | {
      readonly kind: 'readPool';
      readonly namespace: string;
      readonly name: string;
      readonly from: number;
      readonly to: number;
    };

/** How an API call ended, as far as admission cares. */
export type CallOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string; readonly message: string };

const verdict = (v: Verdict): AdmissionStep => ({ kind: 'verdict', verdict: v });

/** A refusal with `code`, or admission when the decision allows. */
function refuseUnless(d: Decision, code: number): Verdict {
  return d.allowed ? ADMIT : { allowed: false, code, message: d.message };
}

/** The first step of admitting a request (pure): every failure to understand it is a refusal. */
export function admitRequest(req: AdmissionRequest): AdmissionStep {
  if (req.resource.resource === CLAIM_RESOURCE) return verdict(admitClaim(req));
  if (req.resource.resource !== 'virtualmachinepools') return verdict(ADMIT);
  if (req.subResource === 'scale') return admitScale(req);
  if ((req.subResource ?? '') !== '') return verdict(ADMIT);
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return verdict(ADMIT);
  const pool = parseWith(PoolModel, req.object);
  if (!pool.ok) return refuse(400, `invalid VirtualMachinePool: ${pool.message}`);
  let old: VirtualMachinePool | undefined;
  if (req.operation === 'UPDATE') {
    const parsed = parseWith(PoolModel, req.oldObject);
    if (!parsed.ok) return refuse(400, `invalid old VirtualMachinePool: ${parsed.message}`);
    old = parsed.data;
  }
  const decided = refuseUnless(decidePoolWrite(pool.data, old), old === undefined ? 422 : 403);
  if (!decided.allowed) return verdict(decided);
  // An unchanged template was accepted before: re-checking it on every replicas change costs a round
  // trip and could refuse a scale because a VirtualMachineClass changed since.
  const template = pool.data.spec.virtualMachineTemplate;
  if (
    old !== undefined &&
    canonicalJson(old.spec.virtualMachineTemplate) === canonicalJson(template)
  )
    return verdict(ADMIT);
  const namespace = pool.data.metadata.namespace ?? req.namespace ?? '';
  const vm = vmFromTemplate(pool.data, { generateName: `${pool.data.metadata.name ?? ''}-` });
  return { kind: 'dryRunVm', namespace, vm };
}

function admitScale(req: AdmissionRequest): AdmissionStep {
  if (req.operation !== 'UPDATE') return verdict(ADMIT);
  const next = parseWith(Scale, req.object);
  const prev = parseWith(Scale, req.oldObject);
  if (!next.ok || !prev.ok)
    return refuse(400, 'expected autoscaling/v1 Scale objects in the review');
  const to = next.data.spec.replicas ?? 0;
  const from = prev.data.spec.replicas ?? 0;
  if (to >= from) return verdict(ADMIT);
  return { kind: 'readPool', namespace: req.namespace ?? '', name: req.name ?? '', from, to };
}

function refuse(code: number, message: string): AdmissionStep {
  return verdict({ allowed: false, code, message });
}

/** How many of the VM API's warnings are relayed, and how long each may be (kubectl shows them all). */
const MAX_WARNINGS = 10;
const MAX_WARNING_LENGTH = 256;

/**
 * A warning of the VM API about the template's VM, in the pool's terms: a field path of the VM
 * (`spec.cpus`) is one of the template (`spec.virtualMachineTemplate.spec.cpus`).
 */
function templateWarning(text: string): string {
  const relayed = text.replace(/"spec\./g, '"spec.virtualMachineTemplate.spec.');
  return relayed.length > MAX_WARNING_LENGTH
    ? `${relayed.slice(0, MAX_WARNING_LENGTH - 1)}…`
    : relayed;
}

/**
 * The answer once the VM API judged the template's VM: its refusal is the pool's, and what it would
 * silently drop (a misspelt field) comes back as warnings.
 */
export function afterDryRun(dry: CallOutcome<{ readonly warnings: readonly string[] }>): Verdict {
  if (dry.ok) {
    const warnings = dry.value.warnings.slice(0, MAX_WARNINGS).map(templateWarning);
    return warnings.length === 0 ? ADMIT : { allowed: true, warnings };
  }
  // The dry run goes as scale-validate's ServiceAccount: a missing grant is ours, not the template's.
  if (dry.reason === 'forbidden' && refusedByRbac(dry.message))
    return {
      allowed: false,
      code: 500,
      message: `cannot check the template against the VirtualMachine API: ${forbiddenMessage('scale-validate', dry.message)}`,
    };
  if (dry.reason === 'invalid' || dry.reason === 'forbidden')
    return {
      allowed: false,
      code: 422,
      message: `the VirtualMachine this template produces is refused: ${dry.message}`,
    };
  return {
    allowed: false,
    code: 500,
    message: `cannot check the template against the VirtualMachine API: ${dry.message}`,
  };
}

/** The answer to a `/scale` decrease once the pool was read (a pool already gone is no concern). */
export function afterPoolRead(
  got: CallOutcome<VirtualMachinePool>,
  step: { readonly name: string; readonly from: number; readonly to: number },
): Verdict {
  if (got.ok) return refuseUnless(decideScaleUpdate(got.value, step.from, step.to), 403);
  if (got.reason === 'notFound') return ADMIT;
  return {
    allowed: false,
    code: 500,
    message: `cannot read VirtualMachinePool "${step.name}": ${got.message}`,
  };
}
