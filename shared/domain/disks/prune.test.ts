import { describe, expect, it } from 'vitest';
import { observe } from '../plan/index.js';
import { pruneDisks } from './prune.js';
import { disk, observed, pool, runnersDiskTemplates, steady } from '../../../test/unit/builders.js';

describe('pruneDisks', () => {
  const withOld = () =>
    pool({
      virtualDiskTemplates: runnersDiskTemplates().filter((t) => t.name !== 'cache'),
    });

  it('detaches a removed template disk from a member and keeps it until nothing references it', () => {
    const p = withOld();
    const a = steady(p, 'runners-aaaaa', { cache: 'runners-cache-aaaaaa' });
    const v = observe(observed(p, [a]));
    const out = pruneDisks(v, new Map(), new Set());
    expect(out.refs.get('runners-aaaaa')?.map((r) => r.name)).toEqual([
      'runners-aaaaa-root',
      'tools-iso',
    ]);
    expect(out.deletes).toEqual([]);
    const unreferenced = pruneDisks(
      observe(observed(p, [], [disk(p, 'runners-cache-aaaaaa', { rv: '7' })])),
      new Map(),
      new Set(),
    );
    expect(unreferenced.deletes).toEqual([
      {
        kind: 'deleteDisk',
        name: 'runners-cache-aaaaaa',
        uid: 'uid-runners-cache-aaaaaa',
        resourceVersion: '7',
        why: 'removedTemplate',
      },
    ]);
  });

  it('keeps a removed template disk that is a boot disk and says so', () => {
    const p = withOld();
    const a = steady(p, 'runners-aaaaa', {
      cache: 'runners-cache-aaaaaa',
      refs: [{ kind: 'VirtualDisk', name: 'runners-cache-aaaaaa' }],
    });
    const out = pruneDisks(observe(observed(p, [a])), new Map(), new Set());
    expect(out.deletes).toEqual([]);
    expect(out.refs.size).toBe(0);
    expect(out.warnings[0]).toContain('boot disk of "runners-aaaaa"');
  });

  it('deletes a free pool-owned disk of a template now under Delete, unless claimed', () => {
    const p = pool({
      virtualDiskTemplates: runnersDiskTemplates().map((t) => ({
        ...t,
        reclaim: { onScaleDown: 'Delete', keep: 0 },
      })),
    });
    const v = observe(observed(p, [], [disk(p, 'runners-cache-ffffff')]));
    expect(pruneDisks(v, new Map(), new Set()).deletes.map((d) => d.why)).toEqual(['deletePolicy']);
    expect(pruneDisks(v, new Map(), new Set(['runners-cache-ffffff'])).deletes).toEqual([]);
  });
});
