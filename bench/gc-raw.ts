/**
 * The floor of benchmark 4c's due pass: a plain loop deleting disks of the same shape through the
 * same funnel, with the same preconditions (uid and resourceVersion), swept over concurrency like
 * the scale-up's raw loop; the pass's write rate is judged against the sweep's fastest point.
 * @module
 */
import { keys } from '../shared/api/index.js';
import type { VirtualDisk } from '../shared/api/index.js';
import { createKube } from '../shared/kube/index.js';
import type { Preconditions } from '../shared/kube/index.js';
import { runBounded } from '../shared/reconcile/index.js';
import type { BenchPlane } from './plane.js';
import { clients } from './objects.js';
import { SWEEP } from './scaleup.js';

/** One point of the sweep: `deleted` disks deleted `concurrency` at a time in `ms`. */
export interface DeletePoint {
  readonly concurrency: number;
  readonly deleted: number;
  readonly ms: number;
}

/** The disks of one sweep point, created and waiting to be deleted. */
export interface DeleteSet {
  readonly concurrency: number;
  readonly namespace: string;
  readonly disks: ReadonlyArray<Preconditions & { readonly name: string }>;
}

/**
 * A disk of `template`'s shape in `namespace`, without its pool's labels and owner: the GC pass and
 * its floor list by those labels, and the kube-controller-manager would collect a disk whose owner
 * is in another namespace.
 */
export function loose(template: VirtualDisk, namespace: string): VirtualDisk {
  const labels = { ...template.metadata.labels };
  delete labels[keys.poolUid];
  delete labels[keys.pool];
  const metadata = { ...template.metadata, namespace, labels };
  delete metadata.ownerReferences;
  return { ...template, metadata };
}

/** Creates, for each concurrency of the sweep, `disks` like them in a namespace of their own. */
export async function prepareDeletes(
  plane: BenchPlane,
  disks: readonly VirtualDisk[],
): Promise<DeleteSet[]> {
  const c = clients(plane.kc);
  const kube = createKube(plane.kc);
  const sets: DeleteSet[] = [];
  for (const k of SWEEP) {
    const namespace = `bench-gc-raw-${String(k)}`;
    await c.namespace(namespace);
    const made = await runBounded([...disks], 64, async (d) => {
      const o = await kube.createDisk(namespace, loose(d, namespace));
      if (!o.ok) throw new Error(`raw delete loop setup: ${o.message}`);
      const { name, uid, resourceVersion } = o.value.metadata;
      return { name: name ?? '', uid: uid ?? '', resourceVersion: resourceVersion ?? '' };
    });
    sets.push({ concurrency: k, namespace, disks: made });
  }
  return sets;
}

/** Deletes each set's disks, `concurrency` in flight, through one funnel kept for the sweep. */
export async function rawDeletes(
  plane: BenchPlane,
  sets: readonly DeleteSet[],
): Promise<DeletePoint[]> {
  const kube = createKube(plane.kc);
  const points: DeletePoint[] = [];
  for (const s of sets) {
    const t0 = performance.now();
    await runBounded(s.disks, s.concurrency, async (d) => {
      const pre = { uid: d.uid, resourceVersion: d.resourceVersion };
      const o = await kube.deleteDisk(s.namespace, d.name, pre);
      if (!o.ok) throw new Error(`raw delete loop: ${o.message}`);
    });
    points.push({
      concurrency: s.concurrency,
      deleted: s.disks.length,
      ms: performance.now() - t0,
    });
  }
  return points;
}

/** The sweep's fastest point (the most deletes per second). */
export function fastest(points: readonly DeletePoint[]): DeletePoint | undefined {
  return [...points].sort((a, b) => b.deleted / b.ms - a.deleted / a.ms)[0];
}
