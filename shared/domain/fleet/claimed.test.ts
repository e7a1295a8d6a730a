/**
 * The claim policy of members: marks, idleness, the effective target, and scaledownwith's refusal.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { HOUR, NOW, at, pool, steady } from '../../../test/unit/builders.js';
import { templateHash } from '../formats/index.js';
import { previewVictims } from '../plan/index.js';
import {
  claimOf,
  effectiveTarget,
  isClaimed,
  isIdleMember,
  isKept,
  planScaleDownWith,
  withClaimMarks,
  withoutClaimMarks,
} from './index.js';

const p = pool({ replicas: 3 });
const hash = templateHash(p.spec.virtualMachineTemplate);
const member = (name = 'runners-aaaaa'): VirtualMachine => steady(p, name).vm;
const mark = { name: 'job-1', uid: 'uid-job-1', onRelease: 'Recycle' as const };

describe('claim marks', () => {
  it('round-trips: marked, read back, removed to the member as it was', () => {
    const m = member();
    const marked = withClaimMarks(m, mark);
    expect(claimOf(marked)).toEqual(mark);
    expect(marked.metadata.labels?.[keys.claimed]).toBe('true');
    expect(isClaimed(marked) && isKept(marked)).toBe(true);
    expect(withoutClaimMarks(marked)).toEqual(m);
  });

  it('needs both name and uid; an unreadable on-release counts as Delete', () => {
    const m = member();
    const half = { ...m, metadata: { ...m.metadata, annotations: { [keys.claimedBy]: 'job-1' } } };
    expect(claimOf(half)).toBeUndefined();
    const odd = withClaimMarks(m, { ...mark, onRelease: 'Delete' });
    odd.metadata.annotations = { ...odd.metadata.annotations, [keys.onRelease]: 'Keep' };
    expect(claimOf(odd)?.onRelease).toBe('Delete');
  });
});

describe('isIdleMember', () => {
  it('is a Ready member on the current revision, nothing kept, draining, standby or leaving', () => {
    const m = member();
    expect(isIdleMember(m, hash, NOW, 0)).toBe(true);
    expect(isIdleMember(withClaimMarks(m, mark), hash, NOW, 0)).toBe(false);
    expect(isIdleMember(m, 'other', NOW, 0)).toBe(false);
    const with_ = (a: Record<string, string>, l: Record<string, string> = {}): VirtualMachine => ({
      ...m,
      metadata: {
        ...m.metadata,
        annotations: { ...m.metadata.annotations, ...a },
        labels: { ...m.metadata.labels, ...l },
      },
    });
    expect(isIdleMember(with_({ [keys.protected]: 'true' }), hash, NOW, 0)).toBe(false);
    expect(isIdleMember(with_({ [keys.drainRequested]: at(0) }), hash, NOW, 0)).toBe(false);
    expect(isIdleMember(with_({}, { [keys.standby]: 'true' }), hash, NOW, 0)).toBe(false);
    expect(isIdleMember({ ...m, status: { phase: 'Starting' } }, hash, NOW, 0)).toBe(false);
    // Created an hour ago without a phase history: Running that long, not two hours.
    expect(isIdleMember(m, hash, NOW, 2 * HOUR)).toBe(false);
  });
});

describe('effectiveTarget', () => {
  const claims = { minIdle: 2, maxReplicas: 6, onRelease: 'Delete' as const };
  it.each([
    // replicas, claimed, pending, expected
    [0, 0, 0, 2],
    [1, 3, 0, 5],
    [1, 3, 2, 6], // capped by maxReplicas
    [8, 3, 2, 8], // spec.replicas is the floor
    [0, 0, 9, 6],
  ])('replicas %i, claimed %i, pending %i: %i', (replicas, claimed, pending, want) => {
    expect(effectiveTarget(replicas, claims, { claimed, pending })).toBe(want);
  });
  it('is spec.replicas without spec.claims', () => {
    expect(effectiveTarget(3, undefined, { claimed: 5, pending: 5 })).toBe(3);
  });
});

describe('scaledownwith of a claimed member', () => {
  it('is refused with 409 naming the claim, nothing written', () => {
    const m = withClaimMarks(member(), mark);
    const r = planScaleDownWith(p, { targets: ['runners-aaaaa'] }, new Map([['runners-aaaaa', m]]));
    expect(r).toEqual({
      ok: false,
      code: 409,
      message: expect.stringContaining('claimed by VirtualMachineClaim "job-1"') as string,
    });
  });

  it('is refused too while the binding is only recorded in the intent', () => {
    const m = member();
    const recorded = {
      ...p,
      status: {
        intent: {
          claims: [
            { claim: 'job-2', claimUid: 'u2', vm: 'runners-aaaaa', vmUid: 'uid-runners-aaaaa' },
          ],
        },
      },
    };
    const r = planScaleDownWith(
      recorded,
      { targets: ['runners-aaaaa'] },
      new Map([['runners-aaaaa', m]]),
    );
    expect(r).toMatchObject({ ok: false, code: 409 });
    expect(!r.ok && r.message).toContain('"job-2"');
  });
});

describe('the victims preview', () => {
  it('lists a claimed member last, as claimed by its claim', () => {
    const a = withClaimMarks(member('runners-aaaaa'), mark);
    const b = member('runners-bbbbb');
    const preview = previewVictims({ pool: p, vms: [a, b], disks: [] }, 2);
    expect(preview.victims.map((v) => [v.name, v.reason])).toEqual([
      ['runners-bbbbb', 'OnlyCandidate'],
      ['runners-aaaaa', 'Claimed'],
    ]);
    expect(preview.victims[1]?.message).toContain('claimed by job-1');
  });
});
