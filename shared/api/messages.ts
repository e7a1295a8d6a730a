/**
 * Requests and reviews vmpool answers: autoscaling/v1 Scale, AdmissionReview v1, the scaledownwith body.
 * @module
 */
import { z } from 'zod';
import { ObjectMeta } from './meta.js';

/** An `autoscaling/v1` Scale, the object of `/scale` requests. */
export const Scale = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.literal('Scale').optional(),
  metadata: ObjectMeta.optional(),
  spec: z.looseObject({ replicas: z.int32().min(0).optional() }).default({}),
  status: z
    .looseObject({ replicas: z.int32().optional(), selector: z.string().optional() })
    .optional(),
});
export type Scale = z.infer<typeof Scale>;

/** The request half of an `admission.k8s.io/v1` AdmissionReview. */
export const AdmissionRequest = z.looseObject({
  uid: z.string().min(1),
  kind: z.looseObject({ group: z.string(), version: z.string(), kind: z.string() }),
  resource: z.looseObject({ group: z.string(), version: z.string(), resource: z.string() }),
  subResource: z.string().optional(),
  name: z.string().optional(),
  namespace: z.string().optional(),
  operation: z.enum(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']),
  userInfo: z.looseObject({ username: z.string().optional() }).optional(),
  object: z.unknown().optional(),
  oldObject: z.unknown().optional(),
  dryRun: z.boolean().optional(),
});
export type AdmissionRequest = z.infer<typeof AdmissionRequest>;

/** An `admission.k8s.io/v1` AdmissionReview as the API server sends it. */
export const AdmissionReview = z.looseObject({
  apiVersion: z.literal('admission.k8s.io/v1'),
  kind: z.literal('AdmissionReview'),
  request: AdmissionRequest,
});
export type AdmissionReview = z.infer<typeof AdmissionReview>;

/**
 * Most targets one scaledownwith may name: each is one VM read, so a request's cost stays bounded
 * (a 1 MiB body could otherwise name some 40 000 and cost as many API calls).
 */
export const MAX_TARGETS = 1000;

/** The `targets` of a scaledownwith, at most {@link MAX_TARGETS}. */
export const Targets = z
  .array(z.string())
  .max(MAX_TARGETS, `at most ${String(MAX_TARGETS)} targets per request`);

/** The body of `POST …/virtualmachinepools/{name}/scaledownwith`. */
export const ScaleDownWithBody = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  targets: Targets,
  dryRun: z.array(z.string()).optional(),
});
export type ScaleDownWithBody = z.infer<typeof ScaleDownWithBody>;
