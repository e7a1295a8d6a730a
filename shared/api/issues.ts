/**
 * How a model's refusal of an input is put in words: the first issue, with its path.
 * @module
 */
import type { z } from 'zod';

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
