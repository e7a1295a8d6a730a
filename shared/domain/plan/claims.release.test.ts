/**
 * Claims through whole plans: release (Delete, Recycle), expiry and loss.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { HOUR, MINUTE, NOW, at, seededRandom } from '../../../test/unit/builders.js';
import {
  claim,
  claimIn,
  claimed,
  events,
  kinds,
  later,
  name,
  run,
  world,
} from '../../../test/unit/claim-builders.js';
import { observedOf } from '../../../test/unit/world.js';
import type { Plan } from './index.js';
import { plan } from './index.js';
import { claimOf } from '../fleet/index.js';

describe('release', () => {
  it('Delete: a deleted claim deletes its member (uid and rv), and the pool refills idle', () => {
    const { w: bound } = run({ ...world(2, { minIdle: 2 }), claims: [claim('a')] });
    expect(bound.vms).toHaveLength(3);
    const member = [...claimed(bound).keys()][0] as string;
    const p = plan(observedOf({ ...bound, claims: [] }), NOW, seededRandom(5));
    const del = p.actions.find((a) => a.kind === 'deleteVm');
    expect(del).toMatchObject({ name: member, why: 'released', claim: { name: 'a' } });
    expect(p.fenced).toBe(true);
    expect(events(p)).toContain('Released');
    // While it goes, no other member leaves for it and none is created beside it.
    expect(kinds(p).filter((k) => k === 'deleteVm' || k === 'createVm')).toEqual(['deleteVm']);
    const { w } = run({ ...bound, claims: [] });
    expect(w.vms.map(name)).not.toContain(member);
    expect(w.vms).toHaveLength(2);
    expect(w.pool.status).toMatchObject({ claimedReplicas: 0, idleReplicas: 2 });
  });

  it('Recycle: the marks are removed and the member is idle again', () => {
    const { w: bound } = run({
      ...world(2, { onRelease: 'Recycle' }),
      claims: [claim('a')],
    });
    const member = [...claimed(bound).keys()][0] as string;
    const p = plan(observedOf({ ...bound, claims: [] }), NOW, seededRandom(5));
    expect(kinds(p)).toEqual(['releaseClaim']);
    expect(events(p)).toEqual(['Released']);
    const { w } = run({ ...bound, claims: [] });
    expect(w.vms.map(name)).toContain(member);
    const vm = w.vms.find((v) => name(v) === member) as VirtualMachine;
    expect(vm.metadata.labels?.[keys.claimed]).toBeUndefined();
    expect(vm.metadata.annotations?.[keys.claimedBy]).toBeUndefined();
    expect(w.pool.status).toMatchObject({ claimedReplicas: 0, idleReplicas: 2 });
  });

  it("the claim's onRelease wins over the pool's", () => {
    const { w: bound } = run({
      ...world(2),
      claims: [claim('a', { onRelease: 'Recycle' })],
    });
    const p = plan(observedOf({ ...bound, claims: [] }), NOW, seededRandom(5));
    expect(kinds(p)).toEqual(['releaseClaim']);
  });

  it('expiry: Expired at ttl (capped by maxTTL), the member released, the claim kept', () => {
    const { w: bound, plans } = run({
      ...world(2, { maxTTL: '30m' }),
      claims: [claim('a', { ttl: '2h' })],
    });
    expect(claimIn(bound, 'a')?.status?.expiresAt).toBe(at(30 * MINUTE));
    expect(plans.at(-1)?.recheckAt).toEqual(later(30 * MINUTE));
    const member = [...claimed(bound).keys()][0] as string;
    const p = plan(observedOf(bound), later(31 * MINUTE), seededRandom(5));
    expect(p.actions.find((a) => a.kind === 'deleteVm')).toMatchObject({ name: member });
    expect(events(p)).toEqual(expect.arrayContaining(['Released', 'ClaimExpired']));
    const { w } = run(bound, later(31 * MINUTE));
    expect(claimIn(w, 'a')?.status).toMatchObject({
      phase: 'Expired',
      virtualMachineName: member,
      conditions: [{ type: 'Bound', status: 'False', reason: 'Expired' }],
    });
    expect(claimed(w).size).toBe(0);
  });

  it('Lost when the member vanished, Expired when it vanished after its expiry', () => {
    const { w: bound } = run({ ...world(2), claims: [claim('a', { ttl: '1h' })] });
    const gone = { ...bound, vms: bound.vms.filter((v) => claimOf(v) === undefined) };
    const lost = plan(observedOf(gone), later(MINUTE), seededRandom(5));
    const write = (p: Plan) => p.actions.find((a) => a.kind === 'claimStatus');
    expect(write(lost)).toMatchObject({ phase: 'Lost' });
    expect(events(lost)).toContain('ClaimLost');
    const expired = plan(observedOf(gone), later(2 * HOUR), seededRandom(5));
    expect(write(expired)).toMatchObject({ phase: 'Expired' });
  });

  it('a person deleting the claimed member: Lost, not a double delete', () => {
    const { w: bound } = run({ ...world(2), claims: [claim('a')] });
    const vms = bound.vms.map((v) =>
      claimOf(v) === undefined
        ? v
        : { ...v, metadata: { ...v.metadata, deletionTimestamp: at(0) } },
    );
    const p = plan(observedOf({ ...bound, vms }), NOW, seededRandom(5));
    expect(kinds(p)).not.toContain('deleteVm');
    expect(p.actions.find((a) => a.kind === 'claimStatus')).toMatchObject({ phase: 'Lost' });
  });

  it('a member of a claim that does not parse is neither released nor taken again', () => {
    const { w: bound } = run({ ...world(2), claims: [claim('a')] });
    const p = plan(
      { ...observedOf({ ...bound, claims: [] }), unreadableClaims: ['uid-a'] },
      NOW,
      seededRandom(5),
    );
    expect(p.actions).toEqual([]);
    expect(p.status.claimedReplicas).toBe(1);
  });
});
