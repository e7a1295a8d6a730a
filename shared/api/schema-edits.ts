/**
 * Edits of the generated CRD schemas: what they leave to another check, so that one mistake gets one
 * clear message. Where the API server would word a mistake badly (a pattern's refusal quotes the
 * regular expression) or twice (a CRD with CEL rules adds "some validation rules were not checked"
 * to every required, enum or length refusal; a bound beside a check that implies it), the other
 * check says it once. The zod models keep every rule.
 * @module
 */
import type { Schema } from './crd-schema.js';

/**
 * The spec schema without `minimum: 0` on `replicas`: the API server already refuses a negative
 * `specReplicasPath` of a CRD with a scale subresource ("should be a non-negative integer"), so the
 * schema's bound only added a second message for the same mistake.
 */
export function withoutReplicasMinimum(spec: Schema): Schema {
  const props = spec.properties as Record<string, Schema> | undefined;
  const replicas = props?.replicas;
  if (props === undefined || replicas === undefined) return spec;
  const rest = { ...replicas };
  delete rest.minimum;
  return { ...spec, properties: { ...props, replicas: rest } };
}

/**
 * `schema` without the keywords `drop` names at the properties path it gives (`[]`: the node itself):
 * `{ 'claims.maxTTL': ['pattern'] }`. A path the schema lacks is left alone.
 */
export function withoutKeywords(
  schema: Schema,
  drop: Readonly<Record<string, readonly string[]>>,
): Schema {
  const strip = (node: Schema, path: readonly string[], keywords: readonly string[]): Schema => {
    const [head, ...rest] = path;
    if (head === undefined) {
      const out = { ...node };
      for (const k of keywords) delete out[k];
      return out;
    }
    const props = node.properties as Record<string, Schema> | undefined;
    const child = props?.[head];
    if (props === undefined || child === undefined) return node;
    return { ...node, properties: { ...props, [head]: strip(child, rest, keywords) } };
  };
  let out = schema;
  for (const [path, keywords] of Object.entries(drop))
    out = strip(out, path === '' ? [] : path.split('.'), keywords);
  return out;
}

/**
 * What the admission webhook says of `spec.claims` instead of the schema. A CRD with CEL rules adds
 * "some validation rules were not checked" to every required, enum or length refusal, and a bound
 * beside a rule that implies it says one mistake twice; a pattern's message is the regular
 * expression. So: a missing `maxReplicas`, an `onRelease` other than Delete or Recycle and a `maxTTL`
 * that is not a Go duration are the webhook's (one clear message each), and a negative `maxReplicas`
 * is the CEL rule's alone (`minIdle` is at least 0).
 */
export const CLAIMS_LEFT_TO_ADMISSION = {
  claims: ['required'],
  'claims.maxReplicas': ['minimum'],
  'claims.onRelease': ['enum'],
  'claims.maxTTL': ['pattern'],
} as const;

/**
 * What the admission webhook checks of a claim's spec instead of the schema: a Go duration (the
 * pattern's refusal would quote the regular expression) and an unchanged poolName on update (a CEL
 * rule would add "some validation rules were not checked" to every required, enum or length
 * refusal, a second message for one mistake). The rest stays the schema's, one message each.
 */
export const CLAIM_LEFT_TO_ADMISSION = {
  poolName: ['x-kubernetes-validations'],
  ttl: ['pattern'],
} as const;
