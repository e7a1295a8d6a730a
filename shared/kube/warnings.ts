/**
 * The API server's `Warning` response headers (RFC 7234 form, `299 - "text"`), which node-fetch joins
 * with ", " when there are several.
 * @module
 */

const WARNING = /\d{3} \S+ "((?:[^"\\]|\\.)*)"/g;

/** The texts of every warning in a (joined) `Warning` header value. */
export function warningTexts(header: string | undefined): string[] {
  if (header === undefined || header === '') return [];
  return [...header.matchAll(WARNING)].map((m) => (m[1] ?? '').replace(/\\(.)/g, '$1'));
}
