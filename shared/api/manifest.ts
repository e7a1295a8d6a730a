/**
 * Any Kubernetes object vmpool installs or inspects as a manifest (CRDs, APIServices, webhook
 * configurations, Services): only what ownership decisions need is modelled, everything else kept.
 * @module
 */
import { z } from 'zod';
import { ObjectMeta } from './meta.js';

/** One entry of `metadata.managedFields`: who wrote which fields, and how. */
export const ManagedFieldsEntry = z.looseObject({
  manager: z.string().optional(),
  operation: z.string().optional(),
  subresource: z.string().optional(),
  time: z.string().optional(),
});
export type ManagedFieldsEntry = z.infer<typeof ManagedFieldsEntry>;

/** An object as the API server stores it, unknown fields kept (so it can be compared or re-sent). */
export const StoredObject = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: ObjectMeta.extend({ managedFields: z.array(ManagedFieldsEntry).optional() }),
});
export type StoredObject = z.infer<typeof StoredObject>;

/** Where an object lives: enough to address it on the API server. */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

/** The address of a manifest (a plain object with apiVersion, kind and metadata.name). */
export function refOf(obj: object): ObjectRef {
  const o = obj as {
    apiVersion?: unknown;
    kind?: unknown;
    metadata?: { name?: unknown; namespace?: unknown };
  };
  const namespace = o.metadata?.namespace;
  return {
    apiVersion: typeof o.apiVersion === 'string' ? o.apiVersion : '',
    kind: typeof o.kind === 'string' ? o.kind : '',
    name: typeof o.metadata?.name === 'string' ? o.metadata.name : '',
    ...(typeof namespace === 'string' ? { namespace } : {}),
  };
}

/** `Kind/name` or `Kind/namespace/name`, for messages. */
export function describeRef(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace === undefined ? '' : `${ref.namespace}/`}${ref.name}`;
}
