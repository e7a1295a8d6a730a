/**
 * How a model's refusal of an input is put in words: the first issue, with its path.
 * @module
 */
import type { z } from 'zod';
import { OwnerReference } from './meta.js';

/** Parsed input, or the words that say why it is not the expected shape. */
export type Parsed<T> =
  { readonly ok: true; readonly data: T } | { readonly ok: false; readonly message: string };

/** `path.to.field: message` of the first issue (zod lists them in document order). */
export function firstIssue(error: z.ZodError): string {
  const i = error.issues[0];
  if (i === undefined) return 'invalid value';
  return i.path.length === 0 ? i.message : `${i.path.map(String).join('.')}: ${i.message}`;
}

/** Parses `value` with `model`; a refusal comes back as its first issue. */
export function parseWith<T>(model: z.ZodType<T>, value: unknown): Parsed<T> {
  const r = model.safeParse(value);
  return r.success ? { ok: true, data: r.data } : { ok: false, message: firstIssue(r.error) };
}

/**
 * An object a list returned that its model refused: skipped, but still who it is and what it
 * claims (labels, owners), so the one pool it may belong to can stop instead of acting blind.
 */
export interface Malformed {
  /** `VirtualMachine`, `VirtualDisk` or `VirtualMachinePool`. */
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly resourceVersion: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly ownerReferences: readonly OwnerReference[];
  /**
   * The VirtualDisks a VM names in `spec.blockDeviceRefs` (every entry with a name, whatever its
   * kind says, when the kind itself is unreadable); empty for other kinds; undefined when the list
   * cannot be read at all, so any disk of the namespace may be one of them.
   */
  readonly references: readonly string[] | undefined;
  /** The model's first issue, `path: message`. */
  readonly issue: string;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * The identity of `raw`, which `kind`'s model refused with `issue`. Read field by field, leniently:
 * whatever part of the metadata is itself malformed is left out rather than failing again.
 */
export function malformedOf(kind: string, raw: unknown, issue: string): Malformed {
  const meta: Record<string, unknown> = isRecord(raw) && isRecord(raw.metadata) ? raw.metadata : {};
  const labels = isRecord(meta.labels)
    ? Object.fromEntries(
        Object.entries(meta.labels).filter((e): e is [string, string] => typeof e[1] === 'string'),
      )
    : {};
  const owners = Array.isArray(meta.ownerReferences) ? meta.ownerReferences : [];
  return {
    kind,
    name: text(meta.name),
    namespace: text(meta.namespace),
    uid: text(meta.uid),
    resourceVersion: text(meta.resourceVersion),
    labels,
    ownerReferences: owners.flatMap((o) => {
      const r = OwnerReference.safeParse(o);
      return r.success ? [r.data] : [];
    }),
    references: kind === 'VirtualMachine' ? diskReferences(raw) : [],
    issue,
  };
}

/** The disk names of a raw VM's `spec.blockDeviceRefs`, read leniently (see {@link Malformed}). */
function diskReferences(raw: unknown): string[] | undefined {
  const spec = isRecord(raw) && isRecord(raw.spec) ? raw.spec : undefined;
  if (spec === undefined) return isRecord(raw) && raw.spec === undefined ? [] : undefined;
  const refs = spec.blockDeviceRefs;
  if (refs === undefined) return [];
  if (!Array.isArray(refs)) return undefined;
  const names: string[] = [];
  for (const r of refs as unknown[]) {
    if (!isRecord(r) || typeof r.name !== 'string') return undefined;
    if (r.kind === 'VirtualDisk' || !['ClusterVirtualImage', 'VirtualImage'].includes(text(r.kind)))
      names.push(r.name);
  }
  return names;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
