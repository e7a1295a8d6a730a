/**
 * A stable template revision: FNV-1a over canonical JSON, independent of key order and of fields the
 * API server or platform defaults.
 * @module
 */
import type { VirtualMachineTemplate } from '../api/index.js';

/** Template spec fields whose value equals the platform default hash as if they were absent. */
const SPEC_DEFAULTS: Readonly<Record<string, unknown>> = {
  runPolicy: 'AlwaysOnUnlessStoppedManually',
  osType: 'Generic',
  bootloader: 'BIOS',
  enableParavirtualization: true,
  terminationGracePeriodSeconds: 60,
  liveMigrationPolicy: 'PreferSafe',
  disruptions: { restartApprovalMode: 'Manual' },
};

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON with sorted keys, and with null, empty objects and empty arrays dropped. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(prune(value) ?? null);
}

function prune(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => prune(v) ?? null);
  if (!isPlainObject(value)) return value ?? undefined;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = prune(value[key]);
    if (v === undefined) continue;
    if (isPlainObject(v) && Object.keys(v).length === 0) continue;
    if (Array.isArray(v) && v.length === 0) continue;
    out[key] = v;
  }
  return out;
}

/** 32-bit FNV-1a of the UTF-8 bytes of `text`, as lowercase hex (8 characters). */
export function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** The revision of a template: what `template-hash` labels and `desiredTemplateHash` carry. */
export function templateHash(template: VirtualMachineTemplate): string {
  const spec: Record<string, unknown> = { ...(template.spec ?? {}) };
  for (const [key, def] of Object.entries(SPEC_DEFAULTS)) {
    if (key in spec && canonicalJson(spec[key]) === canonicalJson(def)) delete spec[key];
  }
  return fnv1a(canonicalJson({ metadata: template.metadata ?? {}, spec }));
}
