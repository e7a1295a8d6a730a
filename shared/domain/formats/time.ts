/**
 * Times as Kubernetes writes them.
 * @module
 */

/** RFC 3339, second precision, UTC: how Kubernetes writes times. */
export function rfc3339(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
