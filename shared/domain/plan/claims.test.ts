/**
 * Claims through whole plans: binding (order, intent, crash and concurrency), release, expiry, loss,
 * pending reasons and the effective target.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineClaim } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { HOUR, MINUTE, NOW, at, pool, seededRandom, steady } from '../../../test/unit/builders.js';
import { claim, withClaims } from '../../../test/unit/claim-builders.js';
import type { World } from '../../../test/unit/world.js';
import { apply, applyAction, converge, observedOf, readOf } from '../../../test/unit/world.js';
import type { Action, Plan } from './index.js';
import { eventFor, plan } from './index.js';
import { claimOf } from '../fleet/index.js';

const later = (ms: number): Date => new Date(NOW.getTime() + ms);
const name = (o: { metadata: { name?: string | undefined } }): string => o.metadata.name ?? '';

/** A converged pool of `n` Running members, `m0` Running longest, with `claims` set when given. */
function world(n: number, claims?: Parameters<typeof withClaims>[1]): World {
  const base = pool({ replicas: n });
  const p = claims === undefined ? base : withClaims(base, claims);
  const ms = Array.from({ length: n }, (_, i) =>
    steady(p, `runners-m${i}xxx`, { created: at(-HOUR + i * MINUTE) }),
  );
  return converge({ pool: p, vms: ms.map((m) => m.vm), disks: ms.flatMap((m) => m.disks) }, NOW).w;
}
const run = (w: World, now: Date = NOW): { w: World; plans: Plan[] } => converge(w, now, 12);
const kinds = (p: Plan): string[] => p.actions.map((a) => a.kind);
const claimed = (w: World): Map<string, string> =>
  new Map(
    w.vms.flatMap((v) => {
      const c = claimOf(v);
      return c === undefined ? [] : [[name(v), c.name] as [string, string]];
    }),
  );
const claimIn = (w: World, n: string): VirtualMachineClaim | undefined =>
  w.claims?.find((c) => name(c) === n);
const events = (p: Plan): string[] => p.actions.flatMap((a) => eventFor(a, true)?.reason ?? []);

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

describe('pending claims and the effective target', () => {
  const reason = (w: World, n: string) =>
    claimIn(w, n)?.status?.conditions?.find((c) => c.type === 'Bound')?.reason;

  it('grows the pool for pending claims plus minIdle, within maxReplicas', () => {
    const w0 = {
      ...world(1, { minIdle: 2, maxReplicas: 5 }),
      claims: ['a', 'b', 'c'].map((n) => claim(n)),
    };
    // The pool grew to claimed + pending + minIdle = 5 (the cap); claims bind as members come up.
    const { w } = run(w0);
    expect(w.vms).toHaveLength(5);
    expect(claimed(w).size).toBe(3);
    expect(w.pool.status).toMatchObject({ claimedReplicas: 3, idleReplicas: 2, replicas: 5 });
    // A fourth and a fifth claim take the idle members; a sixth waits at the maximum.
    const more = {
      ...w,
      claims: [...(w.claims ?? []), ...['d', 'e', 'f'].map((n) => claim(n, { created: at(0) }))],
    };
    const { w: full } = run(more);
    expect(full.vms).toHaveLength(5);
    expect(claimed(full).size).toBe(5);
    expect(reason(full, 'f')).toBe('PoolAtMaximum');
  });

  it('keeps spec.replicas as the floor and never counts claims without spec.claims', () => {
    const floor = run({ ...world(4, { minIdle: 1, maxReplicas: 2 }), claims: [claim('a')] }).w;
    expect(floor.vms).toHaveLength(4);
    const plain = run({ ...world(1), claims: [claim('a'), claim('b', { created: at(0) })] }).w;
    expect(plain.vms).toHaveLength(1);
    expect(reason(plain, 'b')).toBe('PoolAtMaximum');
  });

  it('NoIdleMember while the members it grows are starting; written once (L5)', () => {
    const w0 = {
      ...world(1, { maxReplicas: 3 }),
      claims: [claim('a'), claim('b', { created: at(0) })],
    };
    // The first member is taken; the second claim waits for a member being created.
    const p = plan(observedOf(w0), NOW, seededRandom(1));
    const pending = p.actions.find(
      (a) => a.kind === 'claimStatus' && a.claim.metadata.name === 'b',
    ) as Extract<Action, { kind: 'claimStatus' }>;
    expect(pending.claim.status?.conditions?.[0]?.reason).toBe('NoIdleMember');
    expect(kinds(p)).toContain('createVm');
    // The same reason again is not rewritten.
    const b = { ...claim('b', { created: at(0) }), status: pending.claim.status };
    const w1: World = { ...w0, claims: [claim('a'), b] };
    const again = plan(observedOf(w1), NOW, seededRandom(1));
    expect(
      again.actions.filter((a) => a.kind === 'claimStatus' && a.claim.metadata.name === 'b'),
    ).toEqual([]);
  });

  it('a paused pool binds and releases nothing and says PoolPaused', () => {
    const { w: bound } = run({ ...world(2), claims: [claim('a')] });
    const paused: World = {
      ...bound,
      pool: { ...bound.pool, spec: { ...bound.pool.spec, paused: true } },
      claims: [claim('b')],
    };
    const p = plan(observedOf(paused), NOW, seededRandom(1));
    expect(kinds(p)).toEqual(['claimStatus']);
    expect(p.actions[0]).toMatchObject({ phase: 'Pending' });
    expect(
      (p.actions[0] as Extract<Action, { kind: 'claimStatus' }>).claim.status?.conditions?.[0]
        ?.reason,
    ).toBe('PoolPaused');
  });

  it('a scale-down to 0 keeps every claimed member and holds the surplus', () => {
    const { w: bound } = run({ ...world(3), claims: [claim('a'), claim('b', { created: at(0) })] });
    const down: World = {
      ...bound,
      pool: { ...bound.pool, spec: { ...bound.pool.spec, replicas: 0 } },
    };
    const { w } = run(down);
    expect(w.vms.map(name).sort()).toEqual([...claimed(bound).keys()].sort());
    expect(w.pool.status).toMatchObject({ claimedReplicas: 2, heldReplicas: 2 });
    expect(w.pool.status?.conditions?.find((c) => c.type === 'Progressing')?.message).toContain(
      'or claimed',
    );
  });

  it('with spec.claims a scale-down to 0 keeps the claimed and minIdle', () => {
    const { w: bound } = run({ ...world(3, { minIdle: 1 }), claims: [claim('a')] });
    const down: World = {
      ...bound,
      pool: { ...bound.pool, spec: { ...bound.pool.spec, replicas: 0 } },
    };
    const { w } = run(down);
    expect(w.vms).toHaveLength(2);
    expect(claimed(w).size).toBe(1);
  });
});

describe('a claimed member is never disturbed', () => {
  /** Two members, one claimed by `a`; `edit` changes both members. */
  function bound(
    edit: (v: VirtualMachine) => VirtualMachine = (v) => v,
    n = 2,
  ): { w: World; mine: string; other: string } {
    const { w } = run({ ...world(n), claims: [claim('a')] });
    const mine = [...claimed(w).keys()][0] as string;
    const other = w.vms.map(name).find((x) => x !== mine) as string;
    // `edit` changes the claimed member and one other; the rest stay as they are.
    const vms = w.vms.map((v) => (name(v) === mine || name(v) === other ? edit(v) : v));
    return { w: { ...w, vms }, mine, other };
  }
  const deleted = (p: Plan): string[] =>
    p.actions.flatMap((a) => (a.kind === 'deleteVm' ? [a.name] : []));

  it('by healing: an unhealthy claimed member stays, an unclaimed one is replaced', () => {
    const sick = (v: VirtualMachine): VirtualMachine => ({
      ...v,
      status: {
        ...v.status,
        phase: 'Degraded',
        stats: { phasesTransitions: [{ phase: 'Degraded', timestamp: at(-HOUR) }] },
      },
    });
    // Five members, two of them sick: below the breaker, so healing acts.
    const { w, mine, other } = bound(sick, 5);
    const p0 = { ...w.pool, spec: { ...w.pool.spec, healing: { startupTimeout: '5m' } } };
    const p = plan(observedOf({ ...w, pool: p0 }), NOW, seededRandom(1));
    expect(p.status.intent?.deletes?.map((d) => d.name)).toEqual([other]);
    expect(deleted(p)).not.toContain(mine);
  });

  it('by maxMemberAge: an old claimed member stays, an old unclaimed one is replaced', () => {
    const { w, mine, other } = bound();
    const p0 = { ...w.pool, spec: { ...w.pool.spec, maxMemberAge: '10m' } };
    const p = plan(observedOf({ ...w, pool: p0 }), NOW, seededRandom(1));
    expect(p.status.intent?.deletes?.map((d) => d.name)).toEqual([other]);
    expect(deleted(p)).not.toContain(mine);
  });

  it('by a rollout: the claimed member is not patched until released', () => {
    const old = (v: VirtualMachine): VirtualMachine => ({
      ...v,
      metadata: {
        ...v.metadata,
        labels: { ...v.metadata.labels, [keys.templateHash]: 'old' },
        annotations: { ...v.metadata.annotations, [keys.patchedTemplateHash]: 'old' },
      },
    });
    const { w, mine, other } = bound(old);
    const p = plan(observedOf(w), NOW, seededRandom(1));
    const patched = p.actions.flatMap((a) =>
      a.kind === 'updateVm' && a.why.includes('rollout') ? [name(a.vm)] : [],
    );
    expect(patched).toEqual([other]);
    expect(patched).not.toContain(mine);
  });

  it('by a recorded scale-down victim claimed since: the victim is chosen again', () => {
    const { w, mine } = bound();
    const uid = `uid-${mine}`;
    const p0 = {
      ...w.pool,
      spec: { ...w.pool.spec, replicas: 1 },
      status: { ...w.pool.status, intent: { deletes: [{ name: mine, uid }] } },
    };
    const p = plan(observedOf({ ...w, pool: p0 }), NOW, seededRandom(1));
    expect(deleted(p)).not.toContain(mine);
    expect(deleted(p)).toHaveLength(1);
  });
});
