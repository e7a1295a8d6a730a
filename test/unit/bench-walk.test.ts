/**
 * The memory floor of plan()'s linearity row: one bare read of every object reads each VM and disk
 * (a field changed anywhere changes what it read), and the growth rows compare plan() with it.
 */
import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import { readOnce, readOnceMs } from '../../bench/walk.js';
import { planGrowth } from '../../bench/plan.js';
import type { PlanRow } from '../../bench/plan.js';
import { disk, pool, vm } from './builders.js';

const p = pool({ replicas: 2 });
const objects = () => ({
  vms: [vm(p, 'runners-a'), vm(p, 'runners-b')],
  disks: [disk(p, 'runners-a-cache'), disk(p, 'runners-b-cache')],
});

describe('readOnce', () => {
  it('reads every VM and every disk', () => {
    const base = readOnce(objects());
    const lastVm = objects();
    lastVm.vms[1]!.metadata.uid = 'uid-runners-b-longer';
    const lastDisk = objects();
    lastDisk.disks[1]!.metadata.annotations = {
      [keys.freeSince]: 'x',
    };
    const lastRef = objects();
    lastRef.vms[1]!.spec.blockDeviceRefs!.push({ kind: 'VirtualDisk', name: 'y' });
    for (const changed of [lastVm, lastDisk, lastRef])
      expect(readOnce(changed)).toBeGreaterThan(base);
    expect(readOnce({ vms: [], disks: [] })).toBe(0);
  });

  it('times the read and gives what it summed', () => {
    const timed = readOnceMs(objects(), 0, 3);
    expect(timed.ms).toBeGreaterThanOrEqual(0);
    expect(timed.sum).toBe(readOnce(objects()));
  });
});

describe('planGrowth', () => {
  const row = (members: number, medianMs: number, readMs: number): PlanRow => ({
    members,
    medianMs,
    msPerMember: medianMs / members,
    cpuMs: medianMs,
    runs: 7,
    objectsMiB: 0,
    readOnceMs: readMs,
  });

  it("gives the floor's growth per member and plan()'s cost in reads at each size", () => {
    const g = planGrowth([row(1000, 5, 0.1), row(10_000, 80, 3)]);
    expect(g?.cpu).toBeCloseTo(1.6);
    expect(g?.floor).toBeCloseTo(3);
    expect(g?.reads[0]).toBeCloseTo(50);
    expect(g?.reads[1]).toBeCloseTo(80 / 3);
    expect(planGrowth([row(1000, 5, 0.1)])).toBeUndefined();
  });

  it('judges CPU growth by the median of the pairs of rounds, not by the medians of whole turns', () => {
    // One slow spell of the machine in round 2 of the small size, two in the large: round by round
    // the growth is 1.5× in three rounds of five, 1× and 3× in the others.
    const small = { ...row(1000, 5, 0.1), cpuByRound: [1, 1, 2, 1, 1] };
    const large = { ...row(10_000, 15, 1), cpuByRound: [15, 15, 20, 30, 15] };
    expect(planGrowth([small, large])?.cpu).toBeCloseTo(1.5);
    // Without rounds (a row recorded before them), the medians of the turns.
    expect(planGrowth([row(1000, 5, 0.1), row(10_000, 80, 3)])?.cpu).toBeCloseTo(1.6);
  });
});
