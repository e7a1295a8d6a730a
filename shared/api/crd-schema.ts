/**
 * From zod models to the structural schemas CRDs carry, and the parts every vmpool CRD shares.
 * @module
 */
import { z } from 'zod';

/** A JSON object of a CRD. */
export type Schema = Record<string, unknown>;

const INT32_MAX = 2147483647;
const INT32_MIN = -2147483648;

function isSchema(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Turns zod's OpenAPI 3.0 output into a structural schema the API server accepts: no
 * `additionalProperties: {}` (pruning instead, or preserve-unknown-fields where the model says so and
 * everywhere beneath), int-or-string for quantities, no synthetic integer bounds.
 */
function structural(node: Schema, preserve: boolean): Schema {
  const out: Schema = {};
  const keepUnknown = preserve || node['x-kubernetes-preserve-unknown-fields'] === true;
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema') continue;
    if (k === 'additionalProperties') {
      if (isSchema(v) && Object.keys(v).length > 0) out[k] = structural(v, false);
      continue;
    }
    if (k === 'properties' && isSchema(v)) {
      out[k] = Object.fromEntries(
        Object.entries(v).map(([name, s]) => [name, isSchema(s) ? structural(s, keepUnknown) : s]),
      );
      continue;
    }
    if (k === 'items' && isSchema(v)) {
      out[k] = structural(v, keepUnknown);
      continue;
    }
    out[k] = v;
  }
  if (out.type === 'object' && keepUnknown) out['x-kubernetes-preserve-unknown-fields'] = true;
  const anyOf = out.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const types = anyOf.map((s) => (isSchema(s) ? s.type : undefined)).sort();
    if (types[0] === 'integer' && types[1] === 'string') {
      out.anyOf = [{ type: 'integer' }, { type: 'string' }];
      out['x-kubernetes-int-or-string'] = true;
    }
  }
  if (out.type === 'integer') {
    if (out.maximum === INT32_MAX || out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
    if (out.minimum === INT32_MIN || out.minimum === Number.MIN_SAFE_INTEGER) delete out.minimum;
  }
  return out;
}

/** The structural OpenAPI schema of a zod model, as a CRD version's schema takes it. */
export function schemaOf(model: z.ZodType): Schema {
  const raw = z.toJSONSchema(model, {
    target: 'openapi-3.0',
    io: 'input',
    unrepresentable: 'any',
    cycles: 'throw',
    reused: 'inline',
  }) as Schema;
  return structural(raw, false);
}

/** The AGE column `kubectl get` prints for every kind. */
export const AGE_COLUMN = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'Time of resource creation.',
} as const;

/** A kind's top-level schema: apiVersion, kind and metadata as the API server wants them, spec required. */
export function objectSchema(o: {
  kind: string;
  apiVersion: string;
  description: string;
  spec: Schema;
  status: Schema;
}): Schema {
  return {
    type: 'object',
    description: o.description,
    required: ['spec'],
    properties: {
      apiVersion: {
        type: 'string',
        description: `Versioned schema of this object: ${o.apiVersion}.`,
      },
      kind: { type: 'string', description: `${o.kind}.` },
      // The API server refuses anything but `type` here (metadata is its own schema).
      metadata: { type: 'object' },
      spec: o.spec,
      status: o.status,
    },
  };
}
