import { describe, expect, it } from 'vitest';
import type { RecordedTarget, ScaleDownPolicy, VirtualMachinePool } from '../api/index.js';
import { keys } from '../api/index.js';
import { pool } from '../../test/unit/builders.js';
import {
  decidePoolWrite,
  decideScaleUpdate,
  explicitReplicasMessage,
  explicitScaleMessage,
} from './admission.js';
import { nameTooLong } from './validation.js';

function withRecorded(p: VirtualMachinePool, targets: RecordedTarget[]): VirtualMachinePool {
  return {
    ...p,
    metadata: {
      ...p.metadata,
      annotations: { [keys.scaleDownTargets]: JSON.stringify(targets) },
    },
  };
}

describe('decideScaleUpdate (/scale)', () => {
  it('denies an Explicit decrease with the reference message verbatim', () => {
    expect(decideScaleUpdate(pool({ scaleDownPolicy: 'Explicit' }), 3, 2)).toEqual({
      allowed: false,
      message:
        'VirtualMachinePool "runners" uses scaleDownPolicy Explicit: decreasing replicas through the scale subresource is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.',
    });
    expect(explicitScaleMessage('x')).toContain('scaleDownWith');
  });

  it.each<[string, ScaleDownPolicy | undefined, number, number, boolean]>([
    ['Explicit decrease to 0', 'Explicit', 1, 0, false],
    ['Explicit increase', 'Explicit', 2, 5, true],
    ['Explicit equal', 'Explicit', 3, 3, true],
    ['NewestFirst decrease', 'NewestFirst', 3, 1, true],
    ['OldestFirst decrease', 'OldestFirst', 3, 0, true],
    ['missing pool decrease', undefined, 3, 1, true],
  ])('%s → allowed %s', (_, policy, from, to, allowed) => {
    const p = policy === undefined ? undefined : pool({ scaleDownPolicy: policy });
    expect(decideScaleUpdate(p, from, to).allowed).toBe(allowed);
  });
});

describe('decidePoolWrite (pool CREATE/UPDATE)', () => {
  const explicit = (replicas: number): VirtualMachinePool =>
    pool({ scaleDownPolicy: 'Explicit', replicas });

  it('denies an invalid pool with the first violation', () => {
    const bad = pool({ name: 'n'.repeat(58), scaleDownPolicy: 'Explicit' });
    expect(decidePoolWrite(bad, undefined)).toEqual({
      allowed: false,
      message: nameTooLong('n'.repeat(58)),
    });
  });

  it('allows a valid CREATE, whatever the policy', () => {
    expect(decidePoolWrite(explicit(0), undefined)).toEqual({ allowed: true });
  });

  it('denies an unaddressed spec.replicas decrease under Explicit (deliberately unlike the reference)', () => {
    expect(decidePoolWrite(explicit(2), explicit(3))).toEqual({
      allowed: false,
      message: explicitReplicasMessage('runners'),
    });
    expect(explicitReplicasMessage('runners')).toBe(
      'VirtualMachinePool "runners" uses scaleDownPolicy Explicit: decreasing spec.replicas without naming the replicas to remove is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.',
    );
  });

  it.each<[string, VirtualMachinePool, VirtualMachinePool, boolean]>([
    ['Explicit increase', explicit(4), explicit(3), true],
    ['Explicit unchanged', explicit(3), explicit(3), true],
    ['NewestFirst decrease', pool({ replicas: 1 }), pool({ replicas: 3 }), true],
    [
      'switch to Explicit with a decrease',
      explicit(1),
      pool({ replicas: 3, scaleDownPolicy: 'NewestFirst' }),
      false,
    ],
    ['switch away from Explicit with a decrease', pool({ replicas: 1 }), explicit(3), true],
    [
      'decrease by 1 covered by 1 newly recorded target',
      withRecorded(explicit(2), [{ name: 'a', uid: 'ua' }]),
      explicit(3),
      true,
    ],
    [
      'decrease by 2 covered by 1 target only',
      withRecorded(explicit(1), [{ name: 'a', uid: 'ua' }]),
      explicit(3),
      false,
    ],
    [
      'decrease by 1 with a target that was already recorded',
      withRecorded(explicit(2), [{ name: 'a', uid: 'ua' }]),
      withRecorded(explicit(3), [{ name: 'a', uid: 'ua' }]),
      false,
    ],
    [
      'decrease by 1 with one old and one new target',
      withRecorded(explicit(2), [
        { name: 'a', uid: 'ua' },
        { name: 'b', uid: 'ub' },
      ]),
      withRecorded(explicit(3), [{ name: 'a', uid: 'ua' }]),
      true,
    ],
    [
      'a same-named newcomer (other uid) counts as new',
      withRecorded(explicit(2), [{ name: 'a', uid: 'ua2' }]),
      withRecorded(explicit(3), [{ name: 'a', uid: 'ua' }]),
      true,
    ],
    [
      'clearing recorded targets without a decrease',
      explicit(2),
      withRecorded(explicit(2), [{ name: 'a', uid: 'ua' }]),
      true,
    ],
  ])('%s → allowed %s', (_, next, old, allowed) => {
    expect(decidePoolWrite(next, old).allowed).toBe(allowed);
  });

  it('treats an unset spec.replicas as 0', () => {
    const old = explicit(1);
    const next = explicit(0);
    delete next.spec.replicas;
    expect(decidePoolWrite(next, old).allowed).toBe(false);
    delete old.spec.replicas;
    expect(decidePoolWrite(explicit(2), old).allowed).toBe(true);
  });
});
