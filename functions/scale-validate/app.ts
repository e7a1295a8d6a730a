/**
 * scale-validate: the validating admission webhook for pools and their `/scale` subresource.
 * failurePolicy Fail with a 10 s timeout: a pool write is refused rather than let through unchecked.
 * @module
 */
import type { Context, Hono } from 'hono';
import { AdmissionReview } from '../../shared/api/index.js';
import type { AppDeps, NodeEnv } from '../../shared/http/index.js';
import {
  buildFunctionApp,
  errorResponse,
  parseBody,
  resolveDeps,
} from '../../shared/http/index.js';
import { targetWriters } from '../../shared/domain/index.js';
import { ADMISSION_MAX_BODY_BYTES, reviewAdmission } from '../../shared/reconcile/index.js';

/** Paths the webhook configuration points at (the reference's, so its manifests carry over). */
export const POOL_PATH = '/validate-virtualization-deckhouse-io-v1alpha2-virtualmachinepool';
export const SCALE_PATH = '/validate-virtualization-deckhouse-io-v1alpha2-virtualmachinepool-scale';

function answer(
  uid: string,
  allowed: boolean,
  status?: { code: number; message: string },
  warnings: readonly string[] = [],
): Response {
  const response = {
    uid,
    allowed,
    ...(status ? { status: { ...status, reason: allowed ? undefined : 'Forbidden' } } : {}),
    ...(warnings.length > 0 ? { warnings } : {}),
  };
  return Response.json({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
}

/** What the webhook app is built from. */
export interface ValidateDeps extends AppDeps {
  /**
   * The one user that may add scaledownwith targets to a pool (scale-down-with's, as the API server
   * names it), or `*` for any; default knative/base's scale-down-with ServiceAccount. See {@link targetWriters}.
   */
  readonly recorder?: string;
}

/** The webhook app: both paths take any AdmissionReview v1 and dispatch on resource and subresource. */
export function buildValidateApp(input: ValidateDeps): Hono<NodeEnv> {
  const { kube, log, metrics, health } = resolveDeps(input);
  const writers = targetWriters(input.recorder);
  // An UPDATE review carries the pool twice: the cap is this function's own, above the default.
  const maxBodyBytes = ADMISSION_MAX_BODY_BYTES;
  const app = buildFunctionApp({ name: 'scale-validate', log, metrics, health, maxBodyBytes });
  const handler = async (c: Context<NodeEnv>): Promise<Response> => {
    const parsed = await parseBody(c, AdmissionReview);
    if (!parsed.ok) {
      if (parsed.raw === undefined) return errorResponse(400, parsed.message);
      const message = `malformed AdmissionReview: ${parsed.message}`;
      const uid = (parsed.raw as { request?: { uid?: unknown } } | null | undefined)?.request?.uid;
      // With a uid the API server can match the answer; without one it only understands an HTTP error.
      return typeof uid === 'string' && uid !== ''
        ? answer(uid, false, { code: 400, message })
        : errorResponse(400, message);
    }
    const req = parsed.data.request;
    const verdict = await reviewAdmission(req, kube, c.req.raw.signal, writers);
    const outcome = verdict.allowed ? 'allowed' : 'denied';
    metrics.reconciles.inc({ function: 'scale-validate', outcome });
    if (verdict.allowed) return answer(req.uid, true, undefined, verdict.warnings);
    const { code, message } = verdict;
    const pool = `${req.namespace ?? ''}/${req.name ?? ''}`;
    // A denial because vmpool cannot check (a missing grant, an unreachable API) is vmpool's fault.
    log[code >= 500 ? 'error' : 'info'](
      { pool, op: req.operation, sub: req.subResource ?? '', message },
      'denied',
    );
    return answer(req.uid, false, { code, message }, verdict.warnings);
  };
  app.post(POOL_PATH, handler);
  app.post(SCALE_PATH, handler);
  return app;
}
