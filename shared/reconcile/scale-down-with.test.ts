/**
 * Regression (chaos suite, L6): a scaledownwith target that is not a valid object name made the
 * VM lookup fail with the API server's 400, which was answered 500 (a server error) instead of 400.
 */
import { describe, expect, it } from 'vitest';
import { MAX_TARGETS } from '../api/index.js';
import { requestKey, withRequest } from '../domain/index.js';
import type { Kube } from '../kube/index.js';
import { pool, vm } from '../../test/unit/builders.js';
import { TARGET_READS, scaleDownWith } from './scale-down-with.js';

/** A Kube whose every call is recorded and refused as invalid (as the API server does bad names). */
function recordingKube(calls: string[]): Kube {
  const invalid = (what: string) => {
    calls.push(what);
    return Promise.resolve({
      ok: false as const,
      reason: 'invalid' as const,
      code: 400,
      message: 'Name parameter invalid',
    });
  };
  return new Proxy({} as Kube, {
    get: (_t, prop) => () => invalid(String(prop)),
  });
}

describe('scaleDownWith: malformed target names', () => {
  it.each(['%?izvUfB', 'UPPER', 'a/b', '', '-x', 'x'.repeat(254)])(
    'answers 400 for "%s" without calling the API server',
    async (target) => {
      const calls: string[] = [];
      const s = await scaleDownWith(recordingKube(calls), 'ns', 'pool', { targets: [target] });
      expect(s.code).toBe(400);
      expect(s.message).toContain('is not a valid VirtualMachine name');
      expect(calls).toEqual([]);
    },
  );

  it('answers 400 when the API server refuses a VM lookup as invalid', async () => {
    const calls: string[] = [];
    const kube = recordingKube(calls);
    const pool = {
      apiVersion: 'virtualization.deckhouse.io/v1alpha2',
      kind: 'VirtualMachinePool',
      metadata: { name: 'pool', namespace: 'ns', uid: 'u', resourceVersion: '1' },
      spec: { replicas: 1 },
    };
    const k: Kube = {
      ...kube,
      getPool: () => Promise.resolve({ ok: true, value: pool as never }),
      getVm: (ns, name) => kube.getVm(ns, name),
    };
    const s = await scaleDownWith(k, 'ns', 'pool', { targets: ['pool-bbbbb'] });
    expect(s.code).toBe(400);
    expect(calls).toEqual(['getVm']);
  });
});

describe('scaleDownWith: a landed write whose answer was lost', () => {
  it('answers success when the targets vanished while it retried (was 400 "not found")', async () => {
    // Found by the chaos fault proxy: the pool update landed, its answer was lost, the retry got a
    // conflict, and by the re-read a reconcile had already removed the targets.
    const pool = {
      apiVersion: 'virtualization.deckhouse.io/v1alpha2',
      kind: 'VirtualMachinePool',
      metadata: { name: 'pool', namespace: 'ns', uid: 'pu', resourceVersion: '1' },
      spec: { replicas: 2 },
    };
    const vm = {
      metadata: {
        name: 'pool-bbbbb',
        namespace: 'ns',
        uid: 'vu',
        labels: { 'vmpool.virtualization.deckhouse.io/pool-uid': 'pu' },
        ownerReferences: [
          {
            apiVersion: 'v',
            kind: 'VirtualMachinePool',
            name: 'pool',
            uid: 'pu',
            controller: true,
          },
        ],
      },
      spec: {},
    };
    let vmGets = 0;
    const kube = {
      getPool: () =>
        Promise.resolve({
          ok: true,
          value: { ...pool, spec: { replicas: vmGets === 0 ? 2 : 1 } },
        }),
      getVm: () =>
        Promise.resolve(
          vmGets++ === 0
            ? { ok: true, value: vm }
            : { ok: false, reason: 'notFound', code: 404, message: 'gone' },
        ),
      updatePool: () =>
        Promise.resolve({ ok: false, reason: 'conflict', code: 409, message: 'stale' }),
    } as unknown as Kube;
    const s = await scaleDownWith(kube, 'ns', 'pool', { targets: ['pool-bbbbb'] });
    expect(s.code).toBe(201);
    expect(s.details?.causes?.[0]?.reason).toBe('alreadyTerminating');
  });
});

describe('scaleDownWith: bounded work per request', () => {
  const p = pool({ scaleDownPolicy: 'Explicit', replicas: 1200 });
  const names = Array.from({ length: MAX_TARGETS }, (_, i) => `runners-${String(i)}`);
  const stranger = vm(pool({ name: 'other', uid: 'other-uid' }), 'runners-4');

  /** A Kube of one pool whose VM reads take a while; counts reads and the most in flight. */
  function slowKube(member: (name: string) => boolean) {
    const seen = { reads: 0, inFlight: 0, most: 0, writes: 0 };
    const kube = {
      getPool: () => Promise.resolve({ ok: true, value: p }),
      getVm: async (_ns: string, n: string) => {
        seen.reads++;
        seen.most = Math.max(seen.most, ++seen.inFlight);
        await new Promise((r) => setTimeout(r, 2));
        seen.inFlight--;
        return {
          ok: true,
          value: member(n)
            ? vm(p, n)
            : { ...stranger, metadata: { ...stranger.metadata, name: n } },
        };
      },
      updatePool: (x: unknown) => {
        seen.writes++;
        return Promise.resolve({ ok: true, value: x });
      },
    } as unknown as Kube;
    return { kube, seen };
  }

  it(`the most targets (${String(MAX_TARGETS)}) cost one read each, ${String(TARGET_READS)} at a time`, async () => {
    const { kube, seen } = slowKube(() => true);
    const s = await scaleDownWith(kube, 'ci', 'runners', { targets: names });
    expect(s.code).toBe(201);
    expect(seen.reads).toBe(MAX_TARGETS);
    expect(seen.most).toBe(TARGET_READS);
    expect(seen.writes).toBe(1);
  });

  it('the first non-member stops the reads: 400, a handful of reads, no write', async () => {
    const { kube, seen } = slowKube((n) => n !== 'runners-4');
    const s = await scaleDownWith(kube, 'ci', 'runners', { targets: names });
    expect(s.code).toBe(400);
    expect(s.message).toBe(
      'target VirtualMachine "runners-4" does not belong to VirtualMachinePool "runners"',
    );
    expect(seen.reads).toBeLessThanOrEqual(5 + TARGET_READS);
    expect(seen.writes).toBe(0);
  });

  it.each([
    ['..', 'runners'],
    ['ci', '..'],
    ['CI', 'runners'],
    ['ci', 'a/b'],
    ['x'.repeat(64), 'runners'],
  ])('namespace "%s" and pool "%s" are refused (400) before any API call', async (ns, name) => {
    const calls: string[] = [];
    const s = await scaleDownWith(recordingKube(calls), ns, name, { targets: ['runners-bbbbb'] });
    expect(s.code).toBe(400);
    expect(calls).toEqual([]);
  });

  it('a redelivered request is answered from the pool, without reading its targets', async () => {
    const key = requestKey('sender', 'src', 'id-1');
    const replayed = withRequest(p, key);
    let reads = 0;
    const kube = {
      getPool: () => Promise.resolve({ ok: true, value: replayed }),
      getVm: () => {
        reads++;
        return Promise.resolve({ ok: false, reason: 'notFound', code: 404, message: 'gone' });
      },
    } as unknown as Kube;
    const s = await scaleDownWith(kube, 'ci', 'runners', { targets: names }, { request: key });
    expect(s.code).toBe(201);
    expect(s.message).toBe('already carried out: a redelivered request');
    expect(reads).toBe(0);
  });
});
