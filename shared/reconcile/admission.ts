/**
 * The one effectful step of admission: fetch what the pure adjudication asks for, then answer. It
 * always answers; a failed call becomes a refusal that says what could not be checked.
 * @module
 */
import type { AdmissionRequest } from '../api/index.js';
import type { Verdict } from '../domain/index.js';
import {
  DEFAULT_MAX_REPLICAS,
  admitRequest,
  afterDryRun,
  afterPoolRead,
  replicaGrowthOf,
} from '../domain/index.js';
import type { CallBudget, Kube } from '../kube/index.js';
import { withCallBudget } from '../kube/index.js';

/** `timeoutSeconds` of vmpool's webhooks (knative/base/webhook.yaml), in ms. */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/**
 * What the API calls of one review may spend: two attempts of at most 3 s, 6 s in all. The answer
 * (a denial saying what could not be checked) then reaches the API server well before it gives up
 * at {@link WEBHOOK_TIMEOUT_MS} and answers the user with a bare timeout instead.
 */
export const ADMISSION_BUDGET = { totalMs: 6_000, timeoutMs: 3_000, attempts: 2 } as const;

/**
 * The largest AdmissionReview vmpool must read: an UPDATE carries the pool twice (object and
 * oldObject), each up to etcd's default request limit of 1.5 MiB, plus the review around them.
 */
export const ADMISSION_MAX_BODY_BYTES = 2 * 1.5 * 1024 * 1024 + 1024 * 1024;

/** Decides one admission request within {@link ADMISSION_BUDGET} (and `signal`: the caller left). */
export async function reviewAdmission(
  req: AdmissionRequest,
  kube: Kube,
  signal?: AbortSignal,
  maxReplicas: number = DEFAULT_MAX_REPLICAS,
): Promise<Verdict> {
  const growth = replicaGrowthOf(req, maxReplicas);
  if (growth.refusal !== undefined) return { allowed: false, code: 422, message: growth.refusal };
  const verdict = await decide(req, kube, signal);
  if (growth.warning === undefined) return verdict;
  return { ...verdict, warnings: [growth.warning, ...(verdict.warnings ?? [])] };
}

async function decide(req: AdmissionRequest, kube: Kube, signal?: AbortSignal): Promise<Verdict> {
  const step = admitRequest(req);
  const budget: CallBudget = { ...ADMISSION_BUDGET, ...(signal === undefined ? {} : { signal }) };
  switch (step.kind) {
    case 'verdict':
      return step.verdict;
    case 'dryRunVm':
      return afterDryRun(
        await withCallBudget(budget, () => kube.dryRunCreateVm(step.namespace, step.vm)),
      );
    case 'readPool':
      return afterPoolRead(
        await withCallBudget(budget, () => kube.getPool(step.namespace, step.name)),
        step,
      );
  }
}
