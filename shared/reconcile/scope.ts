/**
 * Which pools an event may concern. Level-triggered: the event only points; live state decides.
 * @module
 */
import type { SourceEvent, WatchedObject } from '../api/index.js';
import { APISERVER_REF, controllerOf, keys } from '../api/index.js';
import type { Shard } from '../domain/index.js';
import { MAX_SHARDS, invalidObjectKey, isDnsLabel, parseShard } from '../domain/index.js';
import type { Kube } from '../kube/index.js';

/** A pool's identity, kept as its two parts end to end (a `namespace/name` string is a label or a
 * map key, never parsed back). */
export interface PoolRef {
  readonly namespace: string;
  readonly name: string;
}

/**
 * Of a tick's scope, the one shard this instance reconciles (`{"shard":"i/n"}` in the tick's data),
 * or the text that was given instead of `i/n`.
 */
interface Sharded {
  readonly shard?: Shard;
  readonly badShard?: string;
}

/**
 * A pool, every pool of a namespace, or every pool (of a shard, for a tick that names one). A pool's
 * `claims` is false when the event is not a claim's, so its reconcile may skip reading claims
 * (absent: they are read).
 */
export type Scope =
  | ({ readonly kind: 'pool'; readonly claims?: boolean } & PoolRef)
  | ({ readonly kind: 'namespace'; readonly namespace: string } & Sharded)
  | ({ readonly kind: 'all' } & Sharded);

const POOL_KIND = 'VirtualMachinePool';
const CLAIM_KIND = 'VirtualMachineClaim';

/** The pool a claim names (`spec.poolName`), read leniently from a watched object. */
function claimedPool(obj: WatchedObject): string | undefined {
  const spec: unknown = obj.spec;
  if (typeof spec !== 'object' || spec === null || !('poolName' in spec)) return undefined;
  return typeof spec.poolName === 'string' && spec.poolName !== '' ? spec.poolName : undefined;
}

/** The pool a watched object belongs to, from the object alone (Resource mode). */
export function scopeOfObject(obj: WatchedObject): Scope {
  const namespace = obj.metadata.namespace ?? '';
  // Only a claim's event has its pool's reconcile read the claims whatever the pool's status says.
  const claims = obj.kind === CLAIM_KIND;
  const pool = (name: string): Scope => ({ kind: 'pool', namespace, name, claims });
  if (obj.kind === POOL_KIND) return pool(obj.metadata.name);
  // A claim reconciles the pool it names, in its own namespace (the pool may not exist: see orphans).
  const claimed = claims ? claimedPool(obj) : undefined;
  if (claimed !== undefined) return pool(claimed);
  const owner = controllerOf(obj.metadata);
  if (owner?.kind === POOL_KIND) return pool(owner.name);
  const label = obj.metadata.labels?.[keys.pool];
  if (label !== undefined && label !== '') return pool(label);
  return namespace === '' ? { kind: 'all' } : { kind: 'namespace', namespace };
}

/**
 * The scope of any accepted event. Reference mode carries no labels or owners, so the child is read
 * back; when it is gone the whole namespace is reconciled.
 */
export async function scopeOf(event: SourceEvent, kube: Kube): Promise<Scope> {
  if (event.type === 'dev.knative.sources.ping') return pingScope(event.data);
  if (!event.type.startsWith(APISERVER_REF)) return scopeOfObject(event.data as WatchedObject);
  const ref = event.data as { kind: string; name: string; namespace?: string | undefined };
  const namespace = ref.namespace ?? '';
  if (ref.kind === POOL_KIND) return { kind: 'pool', namespace, name: ref.name, claims: false };
  if (ref.kind === 'VirtualMachine' && invalidObjectKey(namespace, ref.name) === undefined) {
    const vm = await kube.getVm(namespace, ref.name);
    if (vm.ok)
      return scopeOfObject({
        ...vm.value,
        apiVersion: '',
        kind: ref.kind,
        metadata: { ...vm.value.metadata, name: ref.name },
      });
  }
  return namespace === '' ? { kind: 'all' } : { kind: 'namespace', namespace };
}

function pingScope(data: unknown): Scope {
  const fields = typeof data === 'object' && data !== null ? (data as Record<string, unknown>) : {};
  const ns = fields.namespace;
  const text = fields.shard;
  const shard = typeof text === 'string' ? parseShard(text) : undefined;
  const sharded: Sharded =
    text === undefined
      ? {}
      : shard === undefined
        ? { badShard: typeof text === 'string' ? text : JSON.stringify(text) }
        : { shard };
  return typeof ns === 'string' && ns !== ''
    ? { kind: 'namespace', namespace: ns, ...sharded }
    : { kind: 'all', ...sharded };
}

/**
 * Why a scope taken from an event cannot be acted on (a namespace or pool name no object can have),
 * or undefined. Checked before any API call: such a name would become a path segment of the request
 * and could address something else (`..`).
 */
export function invalidScope(scope: Scope): string | undefined {
  if (scope.kind !== 'pool' && scope.badShard !== undefined)
    return `shard "${scope.badShard}" is not of the form i/n with 0 ≤ i < n ≤ ${MAX_SHARDS}`;
  if (scope.kind === 'all') return undefined;
  if (scope.kind === 'namespace')
    return isDnsLabel(scope.namespace)
      ? undefined
      : `namespace "${scope.namespace}" is not a valid namespace name`;
  return invalidObjectKey(scope.namespace, scope.name);
}
