import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../shared/api/index.js';
import { collectDisks } from '../../shared/reconcile/index.js';
import { testLog } from '../logs.js';
import { HOUR, NOW, at, disk, pool, runnersDiskTemplates } from './builders.js';
import { fakeKube, ok } from './fake-kube.js';

/** A pool keeping no free cache disk, ttl 30m, and three of its cache disks free for 3 hours. */
function expired(): { pool: VirtualMachinePool; disks: ReturnType<typeof disk>[] } {
  const p = pool({
    replicas: 0,
    virtualDiskTemplates: runnersDiskTemplates().map((t) =>
      t.name === 'cache'
        ? { ...t, reclaim: { onScaleDown: 'Retain' as const, keep: 0, ttl: '30m' } }
        : t,
    ),
  });
  const disks = ['a', 'b', 'c'].map((n, i) =>
    disk(p, `runners-cache-${n}`, {
      freeSince: at(-3 * HOUR),
      rv: String(10 + i),
      uid: `uid-${n}`,
    }),
  );
  return { pool: p, disks };
}

describe('a disk-GC pass and its Events', () => {
  it('an Event that throws while deletes are still out is thrown by the pass once all have settled, never left unhandled', async () => {
    const c = expired();
    const unhandled: unknown[] = [];
    const seen = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', seen);
    let releaseLast: () => void = () => undefined;
    const last = new Promise<void>((r) => (releaseLast = r));
    const f = fakeKube({
      listPools: () => ok([c.pool]),
      listDisks: () => ok(c.disks),
      // The first Event throws (a bug, or a crash the chaos tier injects) while a later delete is
      // still out: its rejection must be held, not reported as unhandled.
      recordEvent: (_a, nth) => {
        if (nth === 0) throw new Error('crash in recordEvent');
        return ok(undefined);
      },
      deleteDisk: async ([, name]) => {
        if (name === 'runners-cache-c') await last;
        return ok(undefined);
      },
    });
    try {
      const pass = collectDisks(f.kube, NOW, testLog('test'));
      const settled = pass.then(
        () => 'resolved',
        (e: unknown) => (e instanceof Error ? e.message : String(e)),
      );
      // Let the first deletes and the throwing Event settle while the last delete waits.
      await new Promise((r) => setTimeout(r, 20));
      expect(f.of('deleteDisk')).toHaveLength(3);
      expect(f.of('recordEvent').length).toBeGreaterThanOrEqual(1);
      releaseLast();
      expect(await settled).toBe('crash in recordEvent');
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
      // Every delete's Event was asked for: the throw stopped none of them.
      expect(f.of('recordEvent')).toHaveLength(3);
    } finally {
      process.off('unhandledRejection', seen);
    }
  });
});
