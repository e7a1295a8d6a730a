/**
 * What vmpool owns in a cluster it shares with others, and how it says so: a label on everything it
 * creates (plus its field manager, visible in managedFields), and messages that name what exists,
 * who wrote it and what the operator can do. Pure: the decisions, no I/O.
 * @module
 */
import type { ManagedFieldsEntry, ObjectRef, StoredObject } from '../shared/api/index.js';
import { PART_OF_LABEL as PART_OF, VMPOOL, describeRef } from '../shared/api/index.js';

/** The label `npm start` adds beside `app.kubernetes.io/part-of`: the tool that manages it. */
export const MANAGED_BY = 'app.kubernetes.io/managed-by';
/** vmpool's field manager in managedFields. */
export const FIELD_MANAGER = 'vmpool';

/** True when the stored object carries vmpool's ownership label. */
export function ownedByVmpool(obj: StoredObject): boolean {
  const labels = obj.metadata.labels ?? {};
  return labels[PART_OF] === VMPOOL || labels[MANAGED_BY] === VMPOOL;
}

/** The manifest with vmpool's ownership labels added (the input is not changed). */
export function withOwnership<T extends object>(obj: T): T {
  const o = obj as T & { metadata?: { labels?: Record<string, string> } };
  return {
    ...o,
    metadata: {
      ...o.metadata,
      labels: { ...o.metadata?.labels, [PART_OF]: VMPOOL, [MANAGED_BY]: VMPOOL },
    },
  };
}

/**
 * The manifest with `metadata.resourceVersion` set, a precondition of the write (the input is not
 * changed); undefined leaves it as it is.
 */
export function withResourceVersion<T extends object>(obj: T, version: string | undefined): T {
  if (version === undefined) return obj;
  const o = obj as T & { metadata?: Record<string, unknown> };
  return { ...o, metadata: { ...o.metadata, resourceVersion: version } };
}

/** `manager (Operation[, subresource])`, deduplicated, in managedFields order. */
export function writersOf(obj: StoredObject): string[] {
  const seen = new Set<string>();
  for (const m of obj.metadata.managedFields ?? []) seen.add(writer(m));
  return [...seen];
}

function writer(m: ManagedFieldsEntry): string {
  const how = [m.operation, m.subresource].filter((x) => x !== undefined && x !== '').join(', ');
  return `${m.manager ?? '(unnamed manager)'}${how === '' ? '' : ` (${how})`}`;
}

/** "labels a=b, c=d; written by x (Apply), y (Update)": who an object seems to belong to. */
export function provenance(obj: StoredObject): string {
  const labels = Object.entries(obj.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`);
  const writers = writersOf(obj);
  return [
    labels.length === 0 ? 'no labels' : `labels ${labels.join(', ')}`,
    writers.length === 0 ? 'no managedFields' : `written by ${writers.join(', ')}`,
  ].join('; ');
}

/** The message for an object of vmpool's name that is not vmpool's: what, whose, what to do. */
export function foreignMessage(ref: ObjectRef, existing: StoredObject, todo: string): string {
  return `${describeRef(ref)} exists and is not vmpool's (${provenance(existing)}); vmpool left it unchanged. ${todo}`;
}

/** What an install step should do with an object of vmpool's, given what the cluster has. */
export type OwnedDecision =
  | { readonly kind: 'create' }
  | { readonly kind: 'update' }
  | { readonly kind: 'takeOver' }
  | { readonly kind: 'refuse' };

/**
 * Create what is missing, update what is vmpool's, and replace what is not only when told to.
 * @param existing the stored object of the same name, if any
 * @param takeOver the operator said `--take-over`
 */
export function decideOwned(existing: StoredObject | undefined, takeOver: boolean): OwnedDecision {
  if (existing === undefined) return { kind: 'create' };
  if (ownedByVmpool(existing)) return { kind: 'update' };
  return takeOver ? { kind: 'takeOver' } : { kind: 'refuse' };
}
