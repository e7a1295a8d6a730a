import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  pool,
  vm,
  vmsByName as byName,
  acceptedOf as accepted,
} from '../../../test/unit/builders.js';
import { EMPTY_TARGETS, planScaleDownWith } from './scale-down-with.js';
import { recordedTargets } from './targets.js';

const p = pool({ replicas: 3 });
const a = vm(p, 'runners-aaaaa');
const b = vm(p, 'runners-bbbbb');
const c = vm(p, 'runners-ccccc');

describe('planScaleDownWith refusals', () => {
  it('refuses an empty target list with the reference message', () => {
    expect(planScaleDownWith(p, { targets: [] }, byName(a))).toEqual({
      ok: false,
      code: 400,
      message: 'scaleDownWith requires a non-empty targets list',
    });
    expect(EMPTY_TARGETS).toBe('scaleDownWith requires a non-empty targets list');
  });

  it('refuses a target that is not found, with the reference message', () => {
    expect(planScaleDownWith(p, { targets: [a.metadata.name!, 'ghost'] }, byName(a))).toEqual({
      ok: false,
      code: 400,
      message: 'target VirtualMachine "ghost" not found in namespace "ci"',
    });
  });

  it.each<[string, (v: VirtualMachine) => void]>([
    ['controlled by another pool', (v) => (v.metadata.ownerReferences![0]!.uid = 'other')],
    ['without a controller', (v) => delete v.metadata.ownerReferences],
    ['without the pool-uid label', (v) => delete v.metadata.labels![keys.poolUid]],
  ])('refuses a target %s with the reference message', (_, edit) => {
    const stranger = vm(p, 'stranger');
    edit(stranger);
    expect(
      planScaleDownWith(p, { targets: ['runners-aaaaa', 'stranger'] }, byName(a, stranger)),
    ).toEqual({
      ok: false,
      code: 400,
      message: 'target VirtualMachine "stranger" does not belong to VirtualMachinePool "runners"',
    });
  });

  it.each([[['None']], [['All', 'Some']], [['all']]])('refuses dryRun %j', (dryRun) => {
    const bad = dryRun.find((d) => d !== 'All')!;
    expect(planScaleDownWith(p, { targets: ['runners-aaaaa'], dryRun }, byName(a))).toEqual({
      ok: false,
      code: 400,
      message: `unsupported dryRun value "${bad}": only "All" is allowed`,
    });
  });

  it('validates every target before anything: one bad target refuses the whole request', () => {
    const r = planScaleDownWith(
      p,
      { targets: ['runners-aaaaa', 'runners-bbbbb', 'x'] },
      byName(a, b),
    );
    expect(r.ok).toBe(false);
  });
});

describe('planScaleDownWith accepted', () => {
  it('records one target and lowers replicas by one in the same write', () => {
    const r = accepted(planScaleDownWith(p, { targets: ['runners-bbbbb'] }, byName(b)));
    expect(r.dryRun).toBe(false);
    expect(r.outcomes).toEqual([{ target: 'runners-bbbbb', outcome: 'removed' }]);
    expect(r.replicas).toEqual({ from: 3, to: 2 });
    expect(r.write?.spec.replicas).toBe(2);
    expect(recordedTargets(r.write!)).toEqual([
      { name: 'runners-bbbbb', uid: 'uid-runners-bbbbb' },
    ]);
  });

  it('counts duplicates once (the reference decrements twice)', () => {
    const r = accepted(
      planScaleDownWith(
        p,
        { targets: ['runners-aaaaa', 'runners-bbbbb', 'runners-aaaaa'] },
        byName(a, b),
      ),
    );
    expect(r.outcomes.map((o) => o.outcome)).toEqual(['removed', 'removed', 'duplicate']);
    expect(r.replicas).toEqual({ from: 3, to: 1 });
    expect(recordedTargets(r.write!).map((t) => t.name)).toEqual([
      'runners-aaaaa',
      'runners-bbbbb',
    ]);
  });

  it('does not count a Terminating target (the pool neither shrinks nor deletes another)', () => {
    const dying = vm(p, 'runners-ddddd', { terminating: true });
    const r = accepted(
      planScaleDownWith(p, { targets: ['runners-ddddd', 'runners-aaaaa'] }, byName(dying, a)),
    );
    expect(r.outcomes).toEqual([
      { target: 'runners-ddddd', outcome: 'alreadyTerminating' },
      { target: 'runners-aaaaa', outcome: 'removed' },
    ]);
    expect(r.replicas).toEqual({ from: 3, to: 2 });
    expect(recordedTargets(r.write!).map((t) => t.name)).toEqual(['runners-aaaaa']);
  });

  it('writes nothing when the only target is Terminating', () => {
    const dying = vm(p, 'runners-ddddd', { terminating: true });
    const r = accepted(planScaleDownWith(p, { targets: ['runners-ddddd'] }, byName(dying)));
    expect(r.write).toBeUndefined();
    expect(r.replicas).toEqual({ from: 3, to: 3 });
  });

  it('does not count an already-requested target again, and keeps earlier records', () => {
    const recorded = pool({
      replicas: 2,
      annotations: {
        [keys.scaleDownTargets]: JSON.stringify([
          { name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' },
        ]),
      },
    });
    const r = accepted(
      planScaleDownWith(recorded, { targets: ['runners-aaaaa', 'runners-ccccc'] }, byName(a, c)),
    );
    expect(r.outcomes.map((o) => o.outcome)).toEqual(['alreadyRequested', 'removed']);
    expect(r.replicas).toEqual({ from: 2, to: 1 });
    expect(recordedTargets(r.write!).map((t) => t.name)).toEqual([
      'runners-aaaaa',
      'runners-ccccc',
    ]);
    const again = accepted(planScaleDownWith(recorded, { targets: ['runners-aaaaa'] }, byName(a)));
    expect(again.write).toBeUndefined();
  });

  it('a same-named newcomer (new uid) is not "already requested"', () => {
    const recorded = pool({
      annotations: {
        [keys.scaleDownTargets]: JSON.stringify([{ name: 'runners-aaaaa', uid: 'old' }]),
      },
    });
    const r = accepted(planScaleDownWith(recorded, { targets: ['runners-aaaaa'] }, byName(a)));
    expect(r.outcomes[0]!.outcome).toBe('removed');
  });

  it.each<[number | undefined, number, number]>([
    [1, 2, 0],
    [0, 1, 0],
    [undefined, 1, 0],
    [5, 3, 2],
  ])('floors replicas at 0: from %s with %d targets to %d', (replicas, n, to) => {
    const q: VirtualMachinePool = pool({ replicas: replicas ?? 0 });
    if (replicas === undefined) delete q.spec.replicas;
    const vms = [a, b, c].slice(0, n).map((v) => vm(q, v.metadata.name!));
    const r = accepted(
      planScaleDownWith(q, { targets: vms.map((v) => v.metadata.name!) }, byName(...vms)),
    );
    expect(r.replicas.to).toBe(to);
    expect(r.write?.spec.replicas).toBe(to);
  });

  it('dryRun All reports the outcomes and the would-be write without changing the input pool', () => {
    const before = structuredClone(p);
    const r = accepted(
      planScaleDownWith(
        p,
        { targets: ['runners-aaaaa', 'runners-aaaaa'], dryRun: ['All'] },
        byName(a),
      ),
    );
    expect(r.dryRun).toBe(true);
    expect(r.outcomes.map((o) => o.outcome)).toEqual(['removed', 'duplicate']);
    expect(r.replicas).toEqual({ from: 3, to: 2 });
    expect(p).toEqual(before);
  });

  it('an empty dryRun list is not a dry run', () => {
    expect(
      accepted(planScaleDownWith(p, { targets: ['runners-aaaaa'], dryRun: [] }, byName(a))).dryRun,
    ).toBe(false);
  });

  it('never mutates the pool it was given', () => {
    const before = structuredClone(p);
    planScaleDownWith(p, { targets: ['runners-aaaaa', 'runners-bbbbb'] }, byName(a, b));
    expect(p).toEqual(before);
  });
});
