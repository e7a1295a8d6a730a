/**
 * Turning an AdmissionReview into a verdict: pool CREATE/UPDATE and `/scale` UPDATE.
 * @module
 */
import type {
  AdmissionRequest,
  VirtualMachine,
  VirtualMachinePool,
} from '../../shared/api/index.js';
import { API_VERSION, Scale, VirtualMachinePool as PoolModel } from '../../shared/api/index.js';
import type { Decision } from '../../shared/domain/index.js';
import {
  canonicalJson,
  decidePoolWrite,
  decideScaleUpdate,
  forbiddenMessage,
  refusedByRbac,
} from '../../shared/domain/index.js';
import type { Kube } from '../../shared/kube/index.js';

/** A verdict with the HTTP-like code the API server reports to the caller. */
export type Verdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly code: number; readonly message: string };

const ALLOW: Verdict = { allowed: true };

function deny(d: Decision, code: number): Verdict {
  return d.allowed ? ALLOW : { allowed: false, code, message: d.message };
}

function firstIssue(e: {
  issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>;
}): string {
  const i = e.issues[0];
  return i === undefined ? 'invalid object' : `${i.path.map(String).join('.')}: ${i.message}`;
}

/** The VM a pool's template produces, as the VM API would receive it (generateName `<pool>-`). */
export function synthesizeVm(pool: VirtualMachinePool): VirtualMachine {
  const t = pool.spec.virtualMachineTemplate;
  return {
    apiVersion: API_VERSION,
    kind: 'VirtualMachine',
    metadata: {
      generateName: `${pool.metadata.name ?? ''}-`,
      namespace: pool.metadata.namespace,
      ...(t.metadata?.labels ? { labels: t.metadata.labels } : {}),
      ...(t.metadata?.annotations ? { annotations: t.metadata.annotations } : {}),
    },
    spec: structuredClone(t.spec ?? {}),
  };
}

/** Decides one admission request; every failure to understand it is a denial, never an exception. */
export async function review(req: AdmissionRequest, kube: Kube): Promise<Verdict> {
  if (req.resource.resource !== 'virtualmachinepools') return ALLOW;
  if (req.subResource === 'scale') return reviewScale(req, kube);
  if (req.subResource !== undefined && req.subResource !== '') return ALLOW;
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return ALLOW;
  const pool = PoolModel.safeParse(req.object);
  if (!pool.success)
    return {
      allowed: false,
      code: 400,
      message: `invalid VirtualMachinePool: ${firstIssue(pool.error)}`,
    };
  let old: VirtualMachinePool | undefined;
  if (req.operation === 'UPDATE') {
    const parsed = PoolModel.safeParse(req.oldObject);
    if (!parsed.success)
      return {
        allowed: false,
        code: 400,
        message: `invalid old VirtualMachinePool: ${firstIssue(parsed.error)}`,
      };
    old = parsed.data;
  }
  const verdict = decidePoolWrite(pool.data, old);
  if (!verdict.allowed) return deny(verdict, old === undefined ? 422 : 403);
  // An unchanged template was accepted before: re-checking it on every replicas change costs a round
  // trip and could refuse a scale because a VirtualMachineClass changed since.
  const sameTemplate =
    old !== undefined &&
    canonicalJson(old.spec.virtualMachineTemplate) ===
      canonicalJson(pool.data.spec.virtualMachineTemplate);
  if (sameTemplate) return ALLOW;
  const dry = await kube.dryRunCreateVm(
    pool.data.metadata.namespace ?? req.namespace ?? '',
    synthesizeVm(pool.data),
  );
  if (dry.ok) return ALLOW;
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

async function reviewScale(req: AdmissionRequest, kube: Kube): Promise<Verdict> {
  if (req.operation !== 'UPDATE') return ALLOW;
  const next = Scale.safeParse(req.object);
  const prev = Scale.safeParse(req.oldObject);
  if (!next.success || !prev.success)
    return {
      allowed: false,
      code: 400,
      message: 'expected autoscaling/v1 Scale objects in the review',
    };
  const to = next.data.spec.replicas ?? 0;
  const from = prev.data.spec.replicas ?? 0;
  if (to >= from) return ALLOW;
  const got = await kube.getPool(req.namespace ?? '', req.name ?? '');
  if (!got.ok) {
    if (got.reason === 'notFound') return ALLOW;
    return {
      allowed: false,
      code: 500,
      message: `cannot read VirtualMachinePool "${req.name ?? ''}": ${got.message}`,
    };
  }
  return deny(decideScaleUpdate(got.value, from, to), 403);
}
