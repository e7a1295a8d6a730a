/**
 * Request bodies: JSON, then the model; a refusal says what is wrong in the model's words.
 * @module
 */
import type { z } from 'zod';
import { parseWith } from '../api/index.js';

/** A body that did not parse, with the JSON it held (if any) for answers that must echo a field. */
export type BodyParsed<T> =
  | { readonly ok: true; readonly data: T }
  | { readonly ok: false; readonly message: string; readonly raw?: unknown };

/** Reads the request body as JSON and parses it with `model`. */
export async function parseBody<T>(
  c: { readonly req: { text(): Promise<string> } },
  model: z.ZodType<T>,
): Promise<BodyParsed<T>> {
  let raw: unknown;
  try {
    raw = JSON.parse(await c.req.text());
  } catch {
    return { ok: false, message: 'body is not JSON' };
  }
  const parsed = parseWith(model, raw);
  return parsed.ok ? parsed : { ...parsed, raw };
}
