/**
 * The one effectful step of admission: fetch what the pure adjudication asks for, then answer. It
 * always answers; a failed call becomes a refusal that says what could not be checked.
 * @module
 */
import type { AdmissionRequest } from '../api/index.js';
import type { Verdict } from '../domain/index.js';
import { admitRequest, afterDryRun, afterPoolRead } from '../domain/index.js';
import type { Kube } from '../kube/index.js';

/** Decides one admission request. */
export async function reviewAdmission(req: AdmissionRequest, kube: Kube): Promise<Verdict> {
  const step = admitRequest(req);
  switch (step.kind) {
    case 'verdict':
      return step.verdict;
    case 'dryRunVm':
      return afterDryRun(await kube.dryRunCreateVm(step.namespace, step.vm));
    case 'readPool':
      return afterPoolRead(await kube.getPool(step.namespace, step.name), step);
  }
}
