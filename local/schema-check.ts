/**
 * Does the API server serve the CRD schema vmpool generated? A lossy apply (a typed client that drops
 * `x-kubernetes-*` keys) or another writer would leave a different one, and pools would then be
 * refused or silently pruned. Pure.
 * @module
 */
import { canonicalJson } from '../shared/domain/index.js';

type Json = unknown;

function isObject(v: Json): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The first JSON path where `served` differs from `want` (key order ignored), or undefined. */
export function firstDifference(want: Json, served: Json, path = ''): string | undefined {
  if (canonicalJson(want) === canonicalJson(served)) return undefined;
  if (Array.isArray(want) && Array.isArray(served)) {
    if (want.length !== served.length) return `${path || '<root>'} (length)`;
    for (let i = 0; i < want.length; i++) {
      const d = firstDifference(want[i], served[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
  }
  if (isObject(want) && isObject(served)) {
    const keys = [...new Set([...Object.keys(want), ...Object.keys(served)])].sort();
    for (const k of keys) {
      if (!(k in served)) return `${path}.${k} (missing from the served schema)`;
      if (!(k in want)) return `${path}.${k} (not in vmpool's schema)`;
      const d = firstDifference(want[k], served[k], `${path}.${k}`);
      if (d !== undefined) return d;
    }
  }
  return path || '<root>';
}

interface CrdVersion {
  name?: string;
  schema?: { openAPIV3Schema?: Json };
}

function versionsOf(crd: Json): CrdVersion[] {
  const spec = isObject(crd) ? crd.spec : undefined;
  const versions = isObject(spec) ? spec.versions : undefined;
  return Array.isArray(versions) ? (versions as CrdVersion[]) : [];
}

/**
 * Compares every version's `openAPIV3Schema` of the served CRD with the generated one.
 * @returns undefined when they are equal, else a sentence naming the first difference
 */
export function schemaMismatch(generated: Json, served: Json): string | undefined {
  const have = new Map(versionsOf(served).map((v) => [v.name, v.schema?.openAPIV3Schema]));
  for (const v of versionsOf(generated)) {
    if (!have.has(v.name)) return `version ${v.name ?? '?'} is not served`;
    const d = firstDifference(v.schema?.openAPIV3Schema, have.get(v.name), 'openAPIV3Schema');
    if (d !== undefined) return `version ${v.name ?? '?'} differs at ${d}`;
  }
  return undefined;
}
