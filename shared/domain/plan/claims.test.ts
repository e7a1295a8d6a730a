/**
 * Claims through whole plans: binding (order, intent, crash and concurrency).
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
import type { World } from '../../../test/unit/world.js';
import { apply, applyAction, observedOf, readOf } from '../../../test/unit/world.js';
import type { Action, Plan } from './index.js';
import { plan } from './index.js';

describe('binding', () => {
  it('binds the oldest claim first to the member Ready longest, recording the intent first', () => {
    const w0 = { ...world(3), claims: [claim('b', { created: at(-MINUTE) }), claim('a')] };
    const p = plan(observedOf(w0), NOW, seededRandom(1));
    // Same creation time for `a` and `b`? `a` is one minute old and `b` too: by name then.
    expect(p.fenced).toBe(true);
    expect(p.status.intent?.claims).toEqual([
      { claim: 'a', claimUid: 'uid-a', vm: 'runners-m0xxx', vmUid: 'uid-runners-m0xxx' },
      { claim: 'b', claimUid: 'uid-b', vm: 'runners-m1xxx', vmUid: 'uid-runners-m1xxx' },
    ]);
    expect(kinds(p)).toEqual(['bindClaim', 'bindClaim', 'claimStatus', 'claimStatus']);
    const bound = p.actions[0] as Extract<Action, { kind: 'bindClaim' }>;
    expect(bound.vm.metadata.labels?.[keys.claimed]).toBe('true');
    expect(bound.vm.metadata.annotations).toMatchObject({
      [keys.claimedBy]: 'a',
      [keys.claimUid]: 'uid-a',
      [keys.onRelease]: 'Delete',
    });
    expect(events(p)).toEqual(['Claimed', 'Claimed']);
    const { w, plans } = run(w0);
    expect(claimed(w)).toEqual(
      new Map([
        ['runners-m0xxx', 'a'],
        ['runners-m1xxx', 'b'],
      ]),
    );
    expect(claimIn(w, 'a')?.status).toMatchObject({
      phase: 'Bound',
      virtualMachineName: 'runners-m0xxx',
      virtualMachineUid: 'uid-runners-m0xxx',
      boundAt: at(0),
    });
    // Realized bindings leave the intent; the pool reports them; then it is quiet (L5).
    expect(w.pool.status?.intent?.claims).toBeUndefined();
    expect(w.pool.status).toMatchObject({ claimedReplicas: 2, idleReplicas: 1 });
    expect(plans.at(-1)?.actions).toEqual([]);
  });

  it('older claims go first: a younger claim waits when there is one idle member', () => {
    const w0 = {
      ...world(1),
      claims: [claim('young', { created: at(-MINUTE) }), claim('old', { created: at(-HOUR) })],
    };
    const { w } = run(w0);
    expect([...claimed(w).values()]).toEqual(['old']);
    expect(claimIn(w, 'young')?.status).toMatchObject({ phase: 'Pending' });
  });

  it('never gives one member to two claims nor two members to one claim, across two plans', () => {
    const w0 = { ...world(2), claims: [claim('a'), claim('b', { created: at(-30_000) })] };
    const a = plan(observedOf(w0), NOW, seededRandom(1));
    // B read the pool after A recorded its intent: it finishes the same bindings, no other.
    const afterIntent = { ...w0, pool: { ...w0.pool, status: a.status } };
    const b = plan(observedOf(afterIntent), NOW, seededRandom(2));
    expect(b.status.intent?.claims).toEqual(a.status.intent?.claims);
    const binds = (p: Plan) =>
      p.actions.flatMap((x) => (x.kind === 'bindClaim' ? [`${name(x.vm)}=${x.claim.name}`] : []));
    expect(binds(b)).toEqual(binds(a));
    // A marks first; B's marks (decided from the same read) are refused as stale.
    const read = readOf(afterIntent);
    let w: World = afterIntent;
    for (const x of a.actions.filter((y) => y.kind === 'bindClaim')) w = applyAction(w, x, NOW).w;
    for (const x of b.actions.filter((y) => y.kind === 'bindClaim'))
      expect(applyAction(w, x, NOW, read).ok).toBe(false);
    // A third plan from the marked world binds nothing more and drops the realized intent.
    const c = plan(observedOf(w), NOW, seededRandom(3));
    expect(kinds(c).filter((k) => k === 'bindClaim')).toEqual([]);
    expect(c.status.intent?.claims).toBeUndefined();
    expect(claimed(w).size).toBe(2);
    expect(new Set(claimed(w).values()).size).toBe(2);
  });

  it('finishes a binding after a crash between the mark and the claim status', () => {
    const w0 = { ...world(2), claims: [claim('a')] };
    const p = plan(observedOf(w0), NOW, seededRandom(1));
    let w: World = { ...w0, pool: { ...w0.pool, status: p.status } };
    w = applyAction(w, p.actions[0] as Action, NOW).w; // the mark, then the crash
    const next = plan(observedOf(w), later(MINUTE), seededRandom(2));
    expect(kinds(next)).toEqual(['claimStatus']);
    expect(next.status.intent?.claims).toBeUndefined();
    w = apply(w, next, later(MINUTE));
    expect(claimIn(w, 'a')?.status).toMatchObject({ phase: 'Bound', boundAt: at(MINUTE) });
  });

  it('drops a recorded binding whose claim was deleted before the mark', () => {
    const w0 = { ...world(2), claims: [claim('a')] };
    const p = plan(observedOf(w0), NOW, seededRandom(1));
    const w: World = { ...w0, claims: [], pool: { ...w0.pool, status: p.status } };
    const next = plan(observedOf(w), NOW, seededRandom(2));
    expect(kinds(next)).not.toContain('bindClaim');
    expect(next.status.intent?.claims).toBeUndefined();
  });

  it('takes only idle members: Ready, current revision, not protected, draining or leaving', () => {
    const w0 = world(4);
    const vms = w0.vms.map((v, i): VirtualMachine => {
      const a = { ...v.metadata.annotations };
      const l = { ...v.metadata.labels };
      if (i === 0) a[keys.protected] = 'true';
      if (i === 1) a[keys.drainRequested] = at(0);
      if (i === 2) l[keys.templateHash] = 'old';
      return { ...v, metadata: { ...v.metadata, annotations: a, labels: l } };
    });
    const p = plan({ ...observedOf({ ...w0, vms }), claims: [claim('a')] }, NOW, seededRandom(1));
    expect(p.status.intent?.claims?.map((b) => b.vm)).toEqual(['runners-m3xxx']);
  });

  it('does not bind a member Running for less than minReadySeconds: it will be idle soon', () => {
    const w0 = world(1);
    const p0 = { ...w0.pool, spec: { ...w0.pool.spec, minReadySeconds: 7200 } };
    const p = plan(
      { ...observedOf({ ...w0, pool: p0 }), claims: [claim('a')] },
      NOW,
      seededRandom(1),
    );
    expect(kinds(p)).toEqual(['claimStatus']);
    expect((p.actions[0] as Extract<Action, { kind: 'claimStatus' }>).claim.status).toMatchObject({
      phase: 'Pending',
      conditions: [{ type: 'Bound', status: 'False', reason: 'NoIdleMember' }],
    });
  });
});
