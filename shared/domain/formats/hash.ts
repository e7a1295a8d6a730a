/**
 * A stable template revision: FNV-1a over canonical JSON, independent of key order and of fields the
 * API server or platform defaults.
 * @module
 */
import type { VirtualMachineTemplate } from '../../api/index.js';

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

/** An object or array being written by {@link canonicalJson}. */
interface Open {
  readonly array: boolean;
  readonly members: readonly (readonly [string, unknown])[];
  /** The next member to write. */
  next: number;
  /** Members written so far. */
  written: number;
  /** Where this container's text starts in the output (its key, when it has one). */
  readonly mark: number;
}

/** Keys an object may list before the others (array indices); the rest keep insertion order. */
const MAYBE_INDEX = /^(?:0|[1-9][0-9]{0,9})$/;

function open(value: object, mark: number): Open {
  if (Array.isArray(value)) {
    const members = value.map((v: unknown, i) => [String(i), v] as const);
    return { array: true, members, next: 0, written: 0, mark };
  }
  const record = value as Record<string, unknown>;
  // Members go in the order JSON.stringify gives an object whose keys were inserted sorted (integer
  // keys first, ascending): the order hashes were computed in before this was iterative, so no
  // stored template-hash changes. `__proto__` was never an own key of such an object: still skipped.
  const sorted = Object.keys(record)
    .sort()
    .filter((k) => k !== '__proto__');
  const order = sorted.some((k) => MAYBE_INDEX.test(k))
    ? Object.keys(Object.fromEntries(sorted.map((k) => [k, true])))
    : sorted;
  const members = order.map((k) => [k, record[k]] as const);
  return { array: false, members, next: 0, written: 0, mark };
}

/** The text of a member's value that is not a container; undefined for null and undefined. */
function leaf(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  // JSON.stringify says string, but answers undefined for a function or a symbol.
  const text: string | undefined = JSON.stringify(value);
  return text;
}

/**
 * JSON with sorted keys, and with null, empty objects and empty arrays dropped (as object members;
 * in an array null stays null). Iterative, with its own stack, writing each token once: a template
 * nested thousands of levels deep (pass-through fields have no schema to bound them) costs memory
 * and linear time, never the call stack.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return leaf(value) ?? 'null';
  const out: string[] = [Array.isArray(value) ? '[' : '{'];
  const stack: Open[] = [open(value, 0)];
  /** Starts a member of `into`: the comma, and the key in an object. */
  const begin = (into: Open, key: string): void => {
    if (into.written > 0) out.push(',');
    if (!into.array) out.push(`${JSON.stringify(key)}:`);
  };
  for (let top = stack[0]; top !== undefined; top = stack[stack.length - 1]) {
    const member = top.members[top.next];
    if (member !== undefined) {
      top.next++;
      const [key, child] = member;
      if (typeof child === 'object' && child !== null) {
        const mark = out.length;
        begin(top, key);
        out.push(Array.isArray(child) ? '[' : '{');
        stack.push(open(child, mark));
        continue;
      }
      const text = leaf(child);
      if (text === undefined && !top.array) continue;
      begin(top, key);
      out.push(text ?? 'null');
      top.written++;
      continue;
    }
    stack.pop();
    const parent = stack[stack.length - 1];
    // An empty container is dropped as an object member (its key and bracket taken back), kept in
    // an array and at the top.
    if (top.written === 0 && parent !== undefined && !parent.array) {
      out.length = top.mark;
      continue;
    }
    out.push(top.array ? ']' : '}');
    if (parent !== undefined) parent.written++;
  }
  return out.join('');
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
