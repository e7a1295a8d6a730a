/**
 * One disk-GC pass over the whole cluster: three lists, then preconditioned deletes.
 * @module
 */
import type { Logger } from 'pino';
import { keys } from '../api/index.js';
import type { Collect } from '../domain/index.js';
import { eventFor, nameOf, planGc } from '../domain/index.js';
import type { Kube } from '../kube/index.js';
import { runBounded } from './batch.js';
import { PARALLEL } from './execute.js';

/** What a GC pass did. */
export type GcOutcome =
  | {
      readonly kind: 'done';
      readonly deleted: Collect[];
      readonly skipped: number;
      readonly nextWakeMs: number | undefined;
    }
  | { readonly kind: 'retry'; readonly reason: string };

/**
 * Disks are listed first: a disk claimed or stamped after that list changes its resourceVersion, so
 * the preconditioned delete of the old one fails; bindings and references made before it are seen
 * by the pool and VM lists that follow.
 */
export async function collectDisks(kube: Kube, now: Date, log: Logger): Promise<GcOutcome> {
  const selector = keys.poolUid;
  const disks = await kube.listDisks(undefined, selector);
  if (!disks.ok) return { kind: 'retry', reason: disks.message };
  const pools = await kube.listPools();
  if (!pools.ok) return { kind: 'retry', reason: pools.message };
  const vms = await kube.listVms(undefined, selector);
  if (!vms.ok) return { kind: 'retry', reason: vms.message };
  const gc = planGc(pools.value, vms.value, disks.value, now);
  const poolOf = new Map(pools.value.map((p) => [`${p.metadata.namespace ?? ''}/${nameOf(p)}`, p]));
  const results = await runBounded(gc.collect, PARALLEL, async (c) => {
    const pre = { uid: c.uid, resourceVersion: c.resourceVersion };
    const o = await kube.deleteDisk(c.namespace, c.name, pre);
    const pool = poolOf.get(`${c.namespace}/${c.pool}`);
    const event = eventFor({ kind: 'deleteDisk', name: c.name, ...pre, why: 'gc' }, o.ok);
    // Best effort, like every Event: a refused one changes nothing about the pass.
    if (pool !== undefined && event !== undefined) await kube.recordEvent(pool, event);
    if (o.ok)
      log.info(
        {
          disk: `${c.namespace}/${c.name}`,
          pool: c.pool,
          freeForSeconds: Math.round(c.freeForMs / 1000),
        },
        'collected free disk',
      );
    return o.ok ? c : undefined;
  });
  const deleted = results.filter((c): c is Collect => c !== undefined);
  return {
    kind: 'done',
    deleted,
    skipped: gc.collect.length - deleted.length,
    nextWakeMs: gc.nextWakeMs,
  };
}
