/**
 * The one effectful step of admission: fetch what the pure adjudication asks for, then answer. It
 * always answers; a failed call becomes a refusal that says what could not be checked.
 * @module
 */
import type { AdmissionRequest, VirtualMachine } from '../api/index.js';
import type { CallOutcome, ReadTargets, TargetWriters, Verdict } from '../domain/index.js';
import {
  DEFAULT_MAX_REPLICAS,
  DEFAULT_RECORDER,
  admitWithTargets,
  afterDryRun,
  afterPoolRead,
  afterTargetsRead,
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

/** Target reads in flight at once (scale-down-with adds up to 1000 targets in one write). */
const ADMISSION_TARGET_READS = 8;

/**
 * Decides one admission request within {@link ADMISSION_BUDGET} (and `signal`: the caller left).
 * `writers` says who may add scaledownwith targets (default: knative/base's scale-down-with).
 */
export async function reviewAdmission(
  req: AdmissionRequest,
  kube: Kube,
  signal?: AbortSignal,
  writers: TargetWriters = { recorder: DEFAULT_RECORDER },
  maxReplicas: number = DEFAULT_MAX_REPLICAS,
): Promise<Verdict> {
  const growth = replicaGrowthOf(req, maxReplicas);
  if (growth.refusal !== undefined) return { allowed: false, code: 422, message: growth.refusal };
  const verdict = await decide(req, kube, signal, writers);
  if (growth.warning === undefined) return verdict;
  return { ...verdict, warnings: [growth.warning, ...(verdict.warnings ?? [])] };
}

async function decide(
  req: AdmissionRequest,
  kube: Kube,
  signal: AbortSignal | undefined,
  writers: TargetWriters,
): Promise<Verdict> {
  const budget: CallBudget = { ...ADMISSION_BUDGET, ...(signal === undefined ? {} : { signal }) };
  // One budget for every call of the review, target reads and the dry run together.
  return withCallBudget(budget, async () => {
    let step = admitWithTargets(req, writers);
    if (step.kind === 'readTargets') step = afterTargetsRead(await readTargets(kube, step), step);
    switch (step.kind) {
      case 'verdict':
        return step.verdict;
      case 'dryRunVm':
        return afterDryRun(await kube.dryRunCreateVm(step.namespace, step.vm));
      case 'readPool':
        return afterPoolRead(await kube.getPool(step.namespace, step.name), step);
    }
  });
}

/**
 * Reads the VMs the added targets name, {@link ADMISSION_TARGET_READS} at a time; one not found is
 * left out, and the first other failure ends the reads and is the outcome.
 */
async function readTargets(
  kube: Kube,
  step: ReadTargets,
): Promise<CallOutcome<ReadonlyMap<string, VirtualMachine>>> {
  const vms = new Map<string, VirtualMachine>();
  const queue = [...new Set(step.targets.map((t) => t.name))];
  let failed: CallOutcome<never> | undefined;
  const worker = async (): Promise<void> => {
    for (let n = queue.shift(); n !== undefined && failed === undefined; n = queue.shift()) {
      const got = await kube.getVm(step.namespace, n);
      if (got.ok) vms.set(n, got.value);
      else if (got.reason !== 'notFound') failed ??= got;
    }
  };
  const workers = Math.min(ADMISSION_TARGET_READS, queue.length);
  await Promise.all(Array.from({ length: workers }, worker));
  return failed ?? { ok: true, value: vms };
}
