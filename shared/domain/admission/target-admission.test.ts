import { describe, expect, it } from 'vitest';
import type { AdmissionRequest, RecordedTarget, VirtualMachinePool } from '../../api/index.js';
import { MAX_TARGETS, keys } from '../../api/index.js';
import { pool, poolWrite, vm } from '../../../test/unit/builders.js';
import { explicitReplicasMessage } from './admission.js';
import type { ReadTargets } from './target-admission.js';
import {
  DEFAULT_RECORDER,
  addedTargets,
  admitWithTargets,
  afterTargetsRead,
  forgedTargetMessage,
  memberProblem,
  targetWriters,
  writerProblem,
} from './target-admission.js';

const RECORDER = { recorder: DEFAULT_RECORDER };

function withRecorded(p: VirtualMachinePool, targets: RecordedTarget[]): VirtualMachinePool {
  return {
    ...p,
    metadata: {
      ...p.metadata,
      annotations: { [keys.scaleDownTargets]: JSON.stringify(targets) },
    },
  };
}

const explicit = (replicas: number): VirtualMachinePool =>
  pool({ scaleDownPolicy: 'Explicit', replicas });

const update = (
  object: VirtualMachinePool,
  oldObject: VirtualMachinePool,
  username = DEFAULT_RECORDER,
): AdmissionRequest => poolWrite(object, oldObject, username);

describe('targetWriters (the configured recorder)', () => {
  it('defaults to knative/base’s scale-down-with ServiceAccount; `*` lets anyone', () => {
    expect(DEFAULT_RECORDER).toBe('system:serviceaccount:vmpool-system:scale-down-with');
    expect(targetWriters(undefined)).toEqual(RECORDER);
    expect(targetWriters(' ')).toEqual(RECORDER);
    expect(targetWriters('system:serviceaccount:x:y')).toEqual({
      recorder: 'system:serviceaccount:x:y',
    });
    expect(targetWriters('*')).toEqual({ recorder: undefined });
  });
});

describe('addedTargets', () => {
  it('is what the new annotation holds that the old does not, by name and uid', () => {
    const old = withRecorded(explicit(3), [{ name: 'a', uid: 'ua' }]);
    const next = withRecorded(explicit(1), [
      { name: 'a', uid: 'ua' },
      { name: 'a', uid: 'ua2' },
      { name: 'b', uid: 'ub' },
      { name: 'b', uid: 'ub' },
    ]);
    expect(addedTargets(next, old)).toEqual([
      { name: 'a', uid: 'ua2' },
      { name: 'b', uid: 'ub' },
    ]);
    expect(addedTargets(old, next)).toEqual([]);
  });
});

describe('writerProblem (before any read)', () => {
  const added = [{ name: 'a', uid: 'ua' }];
  it('only the recorder may add targets, unless anyone may', () => {
    expect(writerProblem(explicit(3), added, DEFAULT_RECORDER, RECORDER)).toBeUndefined();
    expect(writerProblem(explicit(3), added, 'alice', RECORDER)).toBe(
      `targets may be added only by ${DEFAULT_RECORDER}, not by alice`,
    );
    expect(writerProblem(explicit(3), added, undefined, RECORDER)).toMatch(/\(unknown user\)$/);
    expect(writerProblem(explicit(3), added, 'alice', { recorder: undefined })).toBeUndefined();
    expect(writerProblem(explicit(3), [], 'alice', RECORDER)).toBeUndefined();
  });
  it('a new pool has nothing to name, and one write adds at most MAX_TARGETS', () => {
    expect(writerProblem(undefined, added, DEFAULT_RECORDER, RECORDER)).toMatch(/new pool/);
    const many = Array.from({ length: MAX_TARGETS + 1 }, (_, i) => ({
      name: `v${i}`,
      uid: `${i}`,
    }));
    expect(writerProblem(explicit(3), many, DEFAULT_RECORDER, RECORDER)).toMatch(/at most 1000/);
  });
});

describe('memberProblem (after the reads)', () => {
  const p = explicit(3);
  const other = pool({ name: 'other', uid: 'pool-uid-2' });
  const t = { name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' };
  it.each([
    ['a live member, same uid', vm(p, t.name), undefined],
    ['no such VM', undefined, 'target "runners-aaaaa" is not a VirtualMachine in namespace "ci"'],
    [
      'a made-up uid',
      vm(p, t.name, { uid: 'real' }),
      'target "runners-aaaaa" has uid real, not uid-runners-aaaaa',
    ],
    ['another pool’s VM', vm(other, t.name), 'target "runners-aaaaa" is not a member of the pool'],
    [
      'a Terminating member',
      vm(p, t.name, { terminating: true }),
      'target "runners-aaaaa" is already being deleted',
    ],
    [
      'a standby member',
      vm(p, t.name, { labels: { [keys.standby]: 'true' } }),
      'target "runners-aaaaa" is a standby member, not a replica',
    ],
  ])('%s → %s', (_, read, problem) => {
    const vms = new Map(read === undefined ? [] : [[t.name, read]]);
    expect(memberProblem(p, [t], vms)).toBe(problem);
  });
});

describe('admitWithTargets / afterTargetsRead', () => {
  const old = explicit(3);
  const forged = withRecorded(explicit(2), [{ name: 'runners-aaaaa', uid: 'made-up' }]);

  it('refuses another user’s added target with the Explicit message, reading nothing', () => {
    const step = admitWithTargets(update(forged, old, 'alice'), RECORDER);
    expect(step).toEqual({
      kind: 'verdict',
      verdict: {
        allowed: false,
        code: 403,
        message: `${explicitReplicasMessage('runners')} Not a scaleDownWith target: targets may be added only by ${DEFAULT_RECORDER}, not by alice.`,
      },
    });
  });

  it('has the recorder’s targets read, then goes on to what admission would do', () => {
    const step = admitWithTargets(update(forged, old), RECORDER);
    expect(step).toMatchObject({
      kind: 'readTargets',
      namespace: 'ci',
      targets: [{ name: 'runners-aaaaa', uid: 'made-up' }],
      next: { kind: 'verdict', verdict: { allowed: true } },
    });
    const read = step as ReadTargets;
    const real = new Map([['runners-aaaaa', vm(old, 'runners-aaaaa')]]);
    expect(afterTargetsRead({ ok: true, value: real }, read)).toEqual({
      kind: 'verdict',
      verdict: {
        allowed: false,
        code: 403,
        message: `${explicitReplicasMessage('runners')} Not a scaleDownWith target: target "runners-aaaaa" has uid uid-runners-aaaaa, not made-up.`,
      },
    });
    const genuine = { ...read, targets: [{ name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' }] };
    expect(afterTargetsRead({ ok: true, value: real }, genuine)).toBe(read.next);
  });

  it('a failed read refuses and says what could not be checked', () => {
    const read = admitWithTargets(update(forged, old), RECORDER) as ReadTargets;
    expect(afterTargetsRead({ ok: false, reason: 'transient', message: 'down' }, read)).toEqual({
      kind: 'verdict',
      verdict: {
        allowed: false,
        code: 500,
        message: 'cannot read the scaleDownWith targets of VirtualMachinePool "runners": down',
      },
    });
  });

  it('guards the annotation on every policy, not only on an Explicit decrease', () => {
    const random = pool({ replicas: 3 });
    const named = withRecorded(pool({ replicas: 3 }), [{ name: 'runners-aaaaa', uid: 'u' }]);
    expect(admitWithTargets(update(named, random, 'alice'), RECORDER)).toMatchObject({
      verdict: {
        allowed: false,
        message: forgedTargetMessage(
          named,
          random,
          `targets may be added only by ${DEFAULT_RECORDER}, not by alice`,
        ),
      },
    });
    expect(forgedTargetMessage(named, random, 'why')).toBe(
      `VirtualMachinePool "runners": annotation ${keys.scaleDownTargets} is written only by the scaleDownWith subresource, and why. Remove specific virtual machines with the scaleDownWith subresource instead.`,
    );
  });

  it('leaves writes that add no target, and refusals, as admission had them', () => {
    const kept = withRecorded(explicit(3), [{ name: 'a', uid: 'ua' }]);
    const dropped = explicit(3);
    expect(admitWithTargets(update(dropped, kept, 'alice'), RECORDER)).toEqual({
      kind: 'verdict',
      verdict: { allowed: true },
    });
    expect(admitWithTargets(update(explicit(2), old, 'alice'), RECORDER)).toMatchObject({
      verdict: { allowed: false, message: explicitReplicasMessage('runners') },
    });
  });
});
