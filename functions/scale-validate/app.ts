/**
 * scale-validate: the validating admission webhook for pools and their `/scale` subresource.
 * failurePolicy Fail with a 10 s timeout: a pool write is refused rather than let through unchecked.
 * @module
 */
import type { Hono } from 'hono';
import { AdmissionReview } from '../../shared/api/index.js';
import type { NodeEnv } from '../../shared/http/index.js';
import { buildFunctionApp, createFunctionMetrics, errorResponse } from '../../shared/http/index.js';
import type { FunctionDeps } from '../../shared/runtime/index.js';
import { review } from './review.js';

/** Paths the webhook configuration points at (the reference's, so its manifests carry over). */
export const POOL_PATH = '/validate-virtualization-deckhouse-io-v1alpha2-virtualmachinepool';
export const SCALE_PATH = '/validate-virtualization-deckhouse-io-v1alpha2-virtualmachinepool-scale';

/** Dependencies of the webhook. */
export interface ValidateAppDeps extends Partial<Pick<FunctionDeps, 'metrics'>> {
  readonly kube: FunctionDeps['kube'];
  readonly log: FunctionDeps['log'];
}

function answer(
  uid: string,
  allowed: boolean,
  status?: { code: number; message: string },
): Response {
  const response = {
    uid,
    allowed,
    ...(status ? { status: { ...status, reason: allowed ? undefined : 'Forbidden' } } : {}),
  };
  return Response.json({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
}

/** The webhook app: both paths take any AdmissionReview v1 and dispatch on resource and subresource. */
export function buildValidateApp(deps: ValidateAppDeps): Hono<NodeEnv> {
  const metrics = deps.metrics ?? createFunctionMetrics();
  const app = buildFunctionApp({ name: 'scale-validate', log: deps.log, metrics });
  const handler = async (c: { req: { text(): Promise<string> } }): Promise<Response> => {
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      return errorResponse(400, 'body is not JSON');
    }
    const parsed = AdmissionReview.safeParse(body);
    if (!parsed.success) {
      const uid = (body as { request?: { uid?: unknown } } | null)?.request?.uid;
      const issue = parsed.error.issues[0];
      const message = `malformed AdmissionReview: ${issue ? `${issue.path.map(String).join('.')}: ${issue.message}` : ''}`;
      // With a uid the API server can match the answer; without one it only understands an HTTP error.
      return typeof uid === 'string' && uid !== ''
        ? answer(uid, false, { code: 400, message })
        : errorResponse(400, message);
    }
    const req = parsed.data.request;
    const verdict = await review(req, deps.kube);
    metrics.reconciles.inc({
      function: 'scale-validate',
      outcome: verdict.allowed ? 'allowed' : 'denied',
    });
    if (verdict.allowed) return answer(req.uid, true);
    // A denial because vmpool cannot check (a missing grant, an unreachable API) is vmpool's fault.
    deps.log[verdict.code >= 500 ? 'error' : 'info'](
      {
        pool: `${req.namespace ?? ''}/${req.name ?? ''}`,
        op: req.operation,
        sub: req.subResource ?? '',
        message: verdict.message,
      },
      'denied',
    );
    return answer(req.uid, false, { code: verdict.code, message: verdict.message });
  };
  app.post(POOL_PATH, handler);
  app.post(SCALE_PATH, handler);
  return app;
}
