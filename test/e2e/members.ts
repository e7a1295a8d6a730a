/**
 * Reading a pool's members and disks back from the API server, for e2e assertions.
 * @module
 */
import { GROUP, VERSION, keys } from '../../shared/api/index.js';
import type { Intent, PoolStatus } from '../../shared/api/index.js';
import { withoutDoneDeletes } from '../../shared/domain/index.js';
import { cluster, type Obj } from './harness.js';

/** A member VM as the tests look at it. */
export interface Member {
  name: string;
  uid: string;
  created: string;
  phase?: string;
  terminating: boolean;
  refs: string[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  conditions: Array<{ type: string; status: string }>;
}

/** Objects of `plural` in `namespace` matching a label selector. */
export async function listObjects(
  namespace: string,
  plural: string,
  selector: string,
): Promise<Obj[]> {
  const r = (await cluster().custom.listNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural,
    labelSelector: selector,
  })) as { items: Obj[] };
  return r.items;
}

/** The VMs labelled for a pool (by name), Terminating ones included. */
export async function members(namespace: string, pool: string): Promise<Member[]> {
  return (await listObjects(namespace, 'virtualmachines', `${keys.pool}=${pool}`)).map((o) => {
    const m = o.metadata;
    const spec = o.spec as { blockDeviceRefs?: Array<{ name: string }> };
    const status = (o.status ?? {}) as { phase?: string; conditions?: Member['conditions'] };
    return {
      name: m.name as string,
      uid: m.uid as string,
      created: m.creationTimestamp as string,
      terminating: m.deletionTimestamp !== undefined,
      refs: (spec.blockDeviceRefs ?? []).map((r) => r.name),
      labels: (m.labels ?? {}) as Record<string, string>,
      annotations: (m.annotations ?? {}) as Record<string, string>,
      conditions: status.conditions ?? [],
      ...(status.phase ? { phase: status.phase } : {}),
    };
  });
}

/**
 * What a pool's recorded `intent` still has to do, given its members: the recorded deletes that are
 * done (no live member has their uid) are inert and stay until a later write drops them, so they are
 * left out. Undefined: nothing pending, the pool is at rest.
 */
export function openIntent(intent: unknown, all: readonly Member[]): Intent | undefined {
  if (intent === undefined) return undefined;
  const live = new Set(all.filter((m) => !m.terminating).map((m) => m.uid));
  return withoutDoneDeletes({ intent } as PoolStatus, live)?.intent;
}
