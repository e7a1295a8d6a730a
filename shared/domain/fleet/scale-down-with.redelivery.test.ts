import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import {
  pool,
  vm,
  vmsByName as byName,
  acceptedOf as accepted,
} from '../../../test/unit/builders.js';
import { planScaleDownWith } from './scale-down-with.js';
import { recordedRequests, recordedTargets, requestKey, withRequest } from './targets.js';

const p = pool({ replicas: 3 });
const a = vm(p, 'runners-aaaaa');
const c = vm(p, 'runners-ccccc');

describe('planScaleDownWith with a request key (CloudEvent redelivery)', () => {
  const key = requestKey('system:serviceaccount:ci:keda', 'https://keda.example', 'evt-1');

  it('records the key in the same write as the decrement', () => {
    const r = accepted(planScaleDownWith(p, { targets: ['runners-aaaaa'] }, byName(a), key));
    expect(r.replay).toBe(false);
    expect(r.write?.spec.replicas).toBe(2);
    expect(recordedRequests(r.write!)).toEqual([key]);
    expect(recordedTargets(r.write!)).toEqual([
      { name: 'runners-aaaaa', uid: 'uid-runners-aaaaa' },
    ]);
  });

  it('answers a recorded key as done without looking at targets that are gone', () => {
    const after = withRequest(p, key);
    const r = accepted(planScaleDownWith(after, { targets: ['runners-aaaaa'] }, new Map(), key));
    expect(r).toMatchObject({
      replay: true,
      write: undefined,
      replicas: { from: 3, to: 3 },
      outcomes: [{ target: 'runners-aaaaa', outcome: 'alreadyDone' }],
    });
  });

  it('remembers a request that had nothing to remove, without changing replicas', () => {
    const dying = vm(p, 'runners-aaaaa', { terminating: true });
    const r = accepted(planScaleDownWith(p, { targets: ['runners-aaaaa'] }, byName(dying), key));
    expect(r.write?.spec.replicas).toBe(3);
    expect(recordedTargets(r.write!)).toEqual([]);
    expect(recordedRequests(r.write!)).toEqual([key]);
  });

  it('neither records a dry run nor a refused request', () => {
    const dry = accepted(
      planScaleDownWith(p, { targets: ['runners-aaaaa'], dryRun: ['All'] }, byName(a), key),
    );
    expect(recordedRequests(dry.write!)).toEqual([]);
    expect(planScaleDownWith(p, { targets: ['ghost'] }, byName(a), key).ok).toBe(false);
  });

  it('a different key for the same targets is a new request', () => {
    const after = withRequest(
      p,
      requestKey('system:serviceaccount:ci:keda', 'https://keda.example', 'evt-0'),
    );
    const r = accepted(planScaleDownWith(after, { targets: ['runners-aaaaa'] }, byName(a), key));
    expect(r.replay).toBe(false);
    expect(recordedRequests(r.write!)).toHaveLength(2);
  });
});

describe('planScaleDownWith and fleet control', () => {
  it('refuses a protected target with 409, naming the VM and the annotation; nothing is written', () => {
    const guarded = vm(p, 'runners-ggggg', { annotations: { [keys.protected]: 'true' } });
    expect(
      planScaleDownWith(p, { targets: ['runners-aaaaa', 'runners-ggggg'] }, byName(a, guarded)),
    ).toEqual({
      ok: false,
      code: 409,
      message:
        'target VirtualMachine "runners-ggggg" is protected from scale-down (annotation vmpool.virtualization.deckhouse.io/protected: "true"); remove the annotation first',
    });
  });

  it('does not count a member a scale-down already asked to leave (a draining victim)', () => {
    const q = pool({
      replicas: 2,
      status: { intent: { deletes: [{ name: 'runners-ccccc', uid: 'uid-runners-ccccc' }] } },
    });
    const r = accepted(
      planScaleDownWith(q, { targets: ['runners-ccccc', 'runners-aaaaa'] }, byName(a, c)),
    );
    expect(r.outcomes).toEqual([
      { target: 'runners-ccccc', outcome: 'alreadyRequested' },
      { target: 'runners-aaaaa', outcome: 'removed' },
    ]);
    expect(r.replicas).toEqual({ from: 2, to: 1 });
    expect(recordedTargets(r.write!).map((t) => t.name)).toEqual(['runners-aaaaa']);
  });
});
