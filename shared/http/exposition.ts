/**
 * The text exposition format's escaping and number and label formatting, shared by every metric type.
 * @module
 */

/** Escapes a label value: backslash, double quote and newline. */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** Escapes a HELP text: backslash and newline. */
export function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample value as the format writes it. */
export function formatNumber(n: number): string {
  if (n === Infinity) return '+Inf';
  if (n === -Infinity) return '-Inf';
  return Number.isNaN(n) ? 'NaN' : String(n);
}

/** `{name="value",…}` of a series, `extra` last (a bucket's `le`); empty without labels. */
export function labelText(
  names: readonly string[],
  values: readonly string[],
  extra?: [string, string],
): string {
  const pairs = names.map((n, i) => `${n}="${escapeLabelValue(values[i] ?? '')}"`);
  if (extra !== undefined) pairs.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
}
