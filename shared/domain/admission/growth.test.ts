import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_REPLICAS, judgeGrowth, parseMaxReplicas, replicaGrowthOf } from './growth.js';

describe('judgeGrowth', () => {
  it('refuses a change above the ceiling, never a change down or one that stays', () => {
    expect(judgeGrowth('p', 1, 100_000, DEFAULT_MAX_REPLICAS).refusal).toContain(
      `${DEFAULT_MAX_REPLICAS} replicas`,
    );
    expect(judgeGrowth('p', undefined, 10_001, 10_000).refusal).toBeDefined();
    expect(judgeGrowth('p', 20_000, 15_000, 10_000)).toEqual({});
    expect(judgeGrowth('p', 20_000, 20_000, 10_000)).toEqual({});
    expect(judgeGrowth('p', 1, 10_000, 10_000).refusal).toBeUndefined();
  });

  it('warns above tenfold (and above 100 for small pools), once, without refusing', () => {
    expect(judgeGrowth('p', 0, 100, 10_000)).toEqual({});
    expect(judgeGrowth('p', 0, 101, 10_000).warning).toContain('from 0 to 101');
    expect(judgeGrowth('p', 50, 500, 10_000)).toEqual({});
    expect(judgeGrowth('p', 50, 501, 10_000).warning).toContain('more than tenfold');
  });
});

describe('parseMaxReplicas', () => {
  it('takes a positive integer, the default when unset, and names a bad value', () => {
    expect(parseMaxReplicas(undefined)).toBe(DEFAULT_MAX_REPLICAS);
    expect(parseMaxReplicas(' ')).toBe(DEFAULT_MAX_REPLICAS);
    expect(parseMaxReplicas('2000')).toBe(2000);
    for (const bad of ['0', '-3', '1.5', 'many'])
      expect(String(parseMaxReplicas(bad))).toContain(`not "${bad}"`);
  });
});

describe('replicaGrowthOf', () => {
  const review = (object: unknown, oldObject?: unknown) =>
    ({
      uid: 'u',
      kind: { group: 'g', version: 'v', kind: 'VirtualMachinePool' },
      resource: { group: 'g', version: 'v', resource: 'virtualmachinepools' },
      name: 'p',
      operation: oldObject === undefined ? 'CREATE' : 'UPDATE',
      object,
      ...(oldObject === undefined ? {} : { oldObject }),
    }) as const;

  it('counts a pool’s standby with its replicas: the standby cannot go around the ceiling', () => {
    const g = replicaGrowthOf(review({ spec: { replicas: 1, standby: { replicas: 100 } } }), 50);
    expect(g.refusal).toContain('spec.replicas + spec.standby.replicas: 101 is above');
    expect(
      replicaGrowthOf(review({ spec: { replicas: 40, standby: { replicas: 5 } } }), 50),
    ).toEqual({});
  });
});
