/**
 * scale-validate: the validating admission webhook for pools, their `/scale` subresource and claims.
 * failurePolicy Fail with a 10 s timeout: a pool write is refused rather than let through unchecked.
 * @module
 */
import type { Context, Hono } from 'hono';
import { AdmissionReview } from '../../shared/api/index.js';
import { MAX_REPLICAS_ENV, parseMaxReplicas, targetWriters } from '../../shared/domain/index.js';
import type { AppDeps, ClientCertificate, NodeEnv } from '../../shared/http/index.js';
import {
  buildFunctionApp,
  clientCertificate,
  errorResponse,
  parseBody,
  requireClientCertificate,
  resolveDeps,
} from '../../shared/http/index.js';
import { ADMISSION_MAX_BODY_BYTES, reviewAdmission } from '../../shared/reconcile/index.js';

/** Paths the webhook configuration points at (the reference's, so its manifests carry over). */
export const POOL_PATH = '/validate-virtualization-deckhouse-io-v1alpha2-virtualmachinepool';
export const SCALE_PATH = '/validate-virtualization-deckhouse-io-v1alpha2-virtualmachinepool-scale';
/** Path of the VirtualMachineClaim webhook. */
export const CLAIM_PATH =
  '/validate-vmpool-virtualization-deckhouse-io-v1alpha1-virtualmachineclaim';

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

/** The ceiling of the environment; a value that is not a positive integer stops the start. */
function maxReplicasOfEnv(): number {
  const n = parseMaxReplicas(process.env[MAX_REPLICAS_ENV]);
  if (n instanceof Error) throw n;
  return n;
}

/** Dependencies; the certificate source is injectable for tests. */
export interface ValidateAppDeps extends AppDeps {
  /**
   * The CA bundle the kube-apiserver's webhook client certificate must be signed by
   * (`WEBHOOK_CLIENT_CA_FILE`). Absent: any caller is served, as a webhook is by default (the
   * API server presents a client certificate only where its admission configuration says so).
   */
  readonly clientCa?: () => string | undefined;
  /** The accepted common names of that certificate (`WEBHOOK_CLIENT_NAMES`); empty: any. */
  readonly clientNames?: readonly string[];
  readonly clientCert?: (c: Context<NodeEnv>) => ClientCertificate | undefined;
  /** The largest `spec.replicas` admitted (default: {@link MAX_REPLICAS_ENV}, else the built-in). */
  readonly maxReplicas?: number;
  /**
   * The one user that may add scaledownwith targets to a pool (scale-down-with's, as the API server
   * names it), or `*` for any; default knative/base's scale-down-with ServiceAccount. See {@link targetWriters}.
   */
  readonly recorder?: string;
}

/** The webhook app: both paths take any AdmissionReview v1 and dispatch on resource and subresource. */
export function buildValidateApp(input: ValidateAppDeps): Hono<NodeEnv> {
  const deps = resolveDeps(input);
  const { kube, log, metrics, health } = deps;
  const maxReplicas = input.maxReplicas ?? maxReplicasOfEnv();
  const writers = targetWriters(input.recorder);
  // An UPDATE review carries the pool twice: the cap is this function's own, above the default.
  const maxBodyBytes = ADMISSION_MAX_BODY_BYTES;
  const app = buildFunctionApp({ name: 'scale-validate', log, metrics, health, maxBodyBytes });
  // Only the API server: a review asks for a dry-run create of the pool's VM in its namespace and
  // answers what the API server said, which no other pod should be able to ask for.
  if (input.clientCa !== undefined) {
    const only = requireClientCertificate({
      ca: input.clientCa,
      clientCert: input.clientCert ?? clientCertificate,
      now: deps.now,
      names: input.clientNames ?? [],
    });
    app.use(POOL_PATH, only);
    app.use(SCALE_PATH, only);
    app.use(CLAIM_PATH, only);
  }
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
    const verdict = await reviewAdmission(req, kube, c.req.raw.signal, writers, maxReplicas);
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
  app.post(CLAIM_PATH, handler);
  return app;
}
