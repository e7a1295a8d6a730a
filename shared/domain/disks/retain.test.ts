import { describe, expect, it } from 'vitest';
import type { DiskTemplate } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  at,
  disk,
  MINUTE,
  observed,
  pool,
  seededRandom,
  steady,
} from '../../../test/unit/builders.js';
import { observe } from '../plan/index.js';
import type { Ledger } from './retain.js';
import { bindRetain } from './retain.js';

function ledger(): Ledger {
  return {
    bindings: [],
    bound: new Map(),
    boundFor: new Set(),
    claimed: new Set(),
    claims: [],
    retainCreates: [],
    deleteCreates: [],
    free: new Map(),
  };
}

const p = pool();
const cache = p.spec.virtualDiskTemplates.find((t) => t.name === 'cache') as DiskTemplate;

describe('bindRetain', () => {
  it('takes the most recently freed disk first (rankFree), each once, then creates a new one', () => {
    const older = disk(p, 'runners-cache-older1', { freeSince: at(-10 * MINUTE) });
    const newer = disk(p, 'runners-cache-newer1', { freeSince: at(-MINUTE) });
    const view = observe(observed(p, [], [newer, older]));
    const l = ledger();
    const rand = seededRandom(3);
    const first = bindRetain(view, l, 'runners-a', cache, rand);
    const second = bindRetain(view, l, 'runners-b', cache, rand);
    const third = bindRetain(view, l, 'runners-c', cache, rand);
    expect([first, second]).toEqual(['runners-cache-newer1', 'runners-cache-older1']);
    expect(l.claims.map((c) => [c.disk.metadata.name, c.forVm])).toEqual([
      [first, 'runners-a'],
      [second, 'runners-b'],
    ]);
    for (const c of l.claims) expect(c.disk.metadata.annotations?.[keys.freeSince]).toBeUndefined();
    expect(l.retainCreates.map((c) => c.disk.metadata.name)).toEqual([third]);
    expect(third).toMatch(/^runners-cache-[a-z0-9]{6}$/);
    expect(l.bindings.map((b) => b.vm)).toEqual(['runners-a', 'runners-b', 'runners-c']);
  });

  it('never takes a disk a member still references', () => {
    const m = steady(p, 'runners-aaaaa');
    const held = m.disks.find((d) => d.metadata.labels?.[keys.diskTemplate] === 'cache')!;
    const stamped = {
      ...held,
      metadata: { ...held.metadata, annotations: { [keys.freeSince]: at(-MINUTE) } },
    };
    const view = observe(observed(p, [{ vm: m.vm, disks: [m.disks[0]!, stamped] }]));
    const l = ledger();
    const got = bindRetain(view, l, 'runners-new', cache, seededRandom(1));
    expect(got).not.toBe(held.metadata.name);
    expect(l.claims).toEqual([]);
  });

  it('returns the recorded binding, recreating its disk when it is gone', () => {
    const view = observe(observed(p, []));
    const l = ledger();
    l.bound.set('runners-a\u0000cache', {
      vm: 'runners-a',
      template: 'cache',
      disk: 'runners-cache-kept01',
    });
    expect(bindRetain(view, l, 'runners-a', cache, seededRandom(1))).toBe('runners-cache-kept01');
    expect(l.retainCreates.map((c) => c.disk.metadata.name)).toEqual(['runners-cache-kept01']);
  });
});
