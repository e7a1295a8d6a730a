/**
 * The floor of the due GC pass (bench/gc-raw.ts): its disks keep the GC's shape but nothing the GC
 * pass or its nothing-due floor would list, and the sweep's best is the highest rate, not the
 * shortest time of unequal work.
 */
import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import type { VirtualDisk } from '../../shared/api/index.js';
import { fastest, loose } from '../../bench/gc-raw.js';

const disk: VirtualDisk = {
  metadata: {
    name: 'p0-cache-0',
    namespace: 'bench-gc',
    labels: { [keys.poolUid]: 'u1', [keys.pool]: 'p0', [keys.diskTemplate]: 'cache' },
    annotations: { [keys.freeSince]: '2026-01-01T00:00:00Z' },
    ownerReferences: [{ apiVersion: 'v', kind: 'VirtualMachinePool', name: 'p0', uid: 'u1' }],
  },
  spec: { persistentVolumeClaim: { size: '1Gi' } },
};

describe('the raw delete loop', () => {
  it('deletes disks of the same shape that no GC list selects and no owner collects', () => {
    const d = loose(disk, 'bench-gc-raw-8');
    expect(d.metadata.namespace).toBe('bench-gc-raw-8');
    expect(d.metadata.labels).toEqual({ [keys.diskTemplate]: 'cache' });
    expect(d.metadata.ownerReferences).toBeUndefined();
    expect(d.metadata.annotations).toEqual(disk.metadata.annotations);
    expect(d.spec).toEqual(disk.spec);
    // The template it was made from is left as it was.
    expect(disk.metadata.labels?.[keys.poolUid]).toBe('u1');
    expect(disk.metadata.ownerReferences).toHaveLength(1);
  });

  it('takes the point with the most deletes per second', () => {
    const best = fastest([
      { concurrency: 8, deleted: 100, ms: 1000 },
      { concurrency: 64, deleted: 500, ms: 2000 },
      { concurrency: 128, deleted: 100, ms: 500 },
    ]);
    expect(best?.concurrency).toBe(64);
    expect(fastest([])).toBeUndefined();
  });
});
