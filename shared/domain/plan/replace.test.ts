/**
 * Self-healing, member lifetime and the disruption budget through whole plans.
 */
import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import {
  at,
  MINUTE,
  NOW,
  SECOND,
  observed,
  pool,
  seededRandom,
  phasedMember as member,
  HOUR_AGO,
  healingPool,
  actionsOf as of,
  later,
} from '../../../test/unit/builders.js';
import type { Plan } from './index.js';
import { plan } from './index.js';
import { backoffMs } from './replace.js';

const healing = (pl: Plan) => pl.status.conditions?.find((c) => c.type === 'Healing');

describe('self-healing', () => {
  it('replaces a member not Running startupTimeout after its creation: recorded, Warning then delete', () => {
    const p = healingPool();
    const ok = member(p, 'runners-aaaaa', 'Running');
    const stuck = member(p, 'runners-bbbbb', 'Starting', { created: -6 * MINUTE });
    const pl = plan(observed(p, [ok, stuck]), NOW, seededRandom(1));
    expect(pl.status.intent?.deletes).toEqual([
      { name: 'runners-bbbbb', uid: 'uid-runners-bbbbb', reason: 'Unhealthy' },
    ]);
    expect(of(pl, 'deleteVm')).toEqual([
      { kind: 'deleteVm', name: 'runners-bbbbb', uid: 'uid-runners-bbbbb', why: 'unhealthy' },
    ]);
    expect(pl.fenced).toBe(true);
    expect(pl.events.map((e) => [e.type, e.reason])).toEqual([['Warning', 'ReplicaUnhealthy']]);
    expect(pl.events[0]!.note).toContain('runners-bbbbb');
    expect(pl.status).toMatchObject({
      unhealthyReplicas: 1,
      healing: { rounds: 1, lastRoundTime: at(0) },
    });
    expect(healing(pl)).toMatchObject({ status: 'True', reason: 'Replacing' });
    // No new VM while it still exists (L1): the replacement comes once it is gone.
    expect(of(pl, 'createVm')).toEqual([]);
    const gone = { ...p, status: pl.status };
    const next = plan(observed(gone, [ok]), later(SECOND), seededRandom(2));
    expect(of(next, 'createVm')).toHaveLength(1);
    expect(next.status.intent?.deletes).toBeUndefined();
  });

  it('waits until the timeout and asks for a reconcile then', () => {
    const p = healingPool();
    const starting = member(p, 'runners-bbbbb', 'Starting', {
      history: [
        ['Pending', -2 * MINUTE],
        ['Running', -90 * SECOND],
        ['Stopping', -70 * SECOND],
        ['Starting', -MINUTE],
      ],
    });
    const pl = plan(
      observed({ ...p, spec: { ...p.spec, replicas: 1 } }, [starting]),
      NOW,
      seededRandom(1),
    );
    expect(pl.actions).toEqual([]);
    // Since its last start (Starting, a minute ago), not since its creation an hour ago.
    expect(pl.recheckAt).toEqual(later(4 * MINUTE));
    expect(healing(pl)).toMatchObject({ status: 'True', reason: 'Healthy' });
  });

  it('replaces a member Degraded that long, and never one stopped on purpose', () => {
    // A budget of 4: the Stopped member under AlwaysOn counts as down, and would take the default 1.
    const p = healingPool({ replicas: 4, budget: 4 });
    const degraded = member(p, 'runners-aaaaa', 'Degraded', {
      history: [
        ['Running', -HOUR_AGO],
        ['Degraded', -10 * MINUTE],
      ],
    });
    const manual = member(p, 'runners-bbbbb', 'Stopped', {
      created: -HOUR_AGO,
      runPolicy: 'Manual',
    });
    const userStop = member(p, 'runners-ccccc', 'Stopped', {
      history: [
        ['Running', -HOUR_AGO],
        ['Stopping', -30 * MINUTE],
        ['Stopped', -29 * MINUTE],
      ],
    });
    const off = member(p, 'runners-ddddd', 'Pending', { runPolicy: 'AlwaysOff' });
    const pl = plan(observed(p, [degraded, manual, userStop, off]), NOW, seededRandom(1));
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-aaaaa']);
    expect(pl.status.unhealthyReplicas).toBe(1);
  });

  it('reports but keeps a protected unhealthy member', () => {
    const p = healingPool({ replicas: 1 });
    const m = member(p, 'runners-aaaaa', 'Starting', {
      created: -HOUR_AGO,
      annotations: { [keys.protected]: 'true' },
    });
    const pl = plan(observed(p, [m]), NOW, seededRandom(1));
    expect(pl.actions).toEqual([]);
    expect(pl.status.unhealthyReplicas).toBe(1);
    expect(healing(pl)?.message).toContain('1 protected unhealthy replicas are kept');
  });

  it('backs off exponentially per pool and says Healing=False when replacements keep failing', () => {
    const p = healingPool({ replicas: 1, timeout: '1m' });
    const stuck = member(p, 'runners-ccccc', 'Starting', { created: -2 * MINUTE });
    // Round 2 happened 30 s ago: round 3 waits 2 × 1m from then.
    const after2 = { ...p, status: { healing: { rounds: 2, lastRoundTime: at(-30 * SECOND) } } };
    const waiting = plan(observed(after2, [stuck]), NOW, seededRandom(1));
    expect(of(waiting, 'deleteVm')).toEqual([]);
    expect(waiting.recheckAt).toEqual(later(backoffMs(2, MINUTE) - 30 * SECOND));
    expect(healing(waiting)).toMatchObject({ status: 'False', reason: 'ReplacementsFailing' });
    expect(healing(waiting)?.message).toContain(`no earlier than ${at(90 * SECOND)}`);
    const due = plan(observed(after2, [stuck]), later(90 * SECOND), seededRandom(1));
    expect(of(due, 'deleteVm')).toHaveLength(1);
    expect(due.status.healing).toEqual({ rounds: 3, lastRoundTime: at(90 * SECOND) });
    // The back-off doubles up to an hour.
    expect([1, 2, 3, 10].map((r) => backoffMs(r, MINUTE))).toEqual([
      MINUTE,
      2 * MINUTE,
      4 * MINUTE,
      60 * MINUTE,
    ]);
  });

  it('forgets the back-off once every member runs', () => {
    const p = healingPool({ replicas: 1 });
    const fine = { ...p, status: { healing: { rounds: 3, lastRoundTime: at(-MINUTE) } } };
    const pl = plan(observed(fine, [member(p, 'runners-aaaaa', 'Running')]), NOW, seededRandom(1));
    expect(pl.status.healing).toBeUndefined();
    expect(healing(pl)).toMatchObject({ status: 'True', reason: 'Healthy' });
  });

  it('heals at most rollout.maxUnavailable at once, counting replacements in progress', () => {
    const p = healingPool({ replicas: 3, budget: 1, maxUnhealthy: '100%' });
    const sick = ['runners-aaaaa', 'runners-bbbbb', 'runners-ccccc'].map((n) =>
      member(p, n, 'Starting', { created: -10 * MINUTE }),
    );
    const pl = plan(observed(p, sick), NOW, seededRandom(1));
    expect(of(pl, 'deleteVm').map((d) => d.name)).toEqual(['runners-aaaaa']);
    // The first is still going: nothing more.
    const busy = plan(observed({ ...p, status: pl.status }, sick), later(SECOND), seededRandom(1));
    expect(busy.status.intent?.deletes).toHaveLength(1);
    expect(of(busy, 'deleteVm').map((d) => d.name)).toEqual(['runners-aaaaa']);
  });
});

describe('maxMemberAge', () => {
  function aged(o: { budget?: number; drain?: string } = {}) {
    const p = pool({ replicas: 3 });
    p.spec.maxMemberAge = '24h';
    if (o.budget !== undefined) p.spec.rollout = { maxUnavailable: o.budget };
    if (o.drain !== undefined) p.spec.scaleDown = { drainTimeout: o.drain };
    const ms = [
      member(p, 'runners-aaaaa', 'Running', { created: -25 * HOUR_AGO }),
      member(p, 'runners-bbbbb', 'Running', { created: -30 * HOUR_AGO }),
      member(p, 'runners-ccccc', 'Running', { created: -2 * HOUR_AGO }),
    ];
    return { p, ms };
  }

  it('replaces expired members oldest first within the budget (ReplicaExpired), and rechecks at the next expiry', () => {
    const { p, ms } = aged({ budget: 1 });
    const pl = plan(observed(p, ms), NOW, seededRandom(1));
    expect(of(pl, 'deleteVm')).toEqual([
      {
        kind: 'deleteVm',
        name: 'runners-bbbbb',
        uid: 'uid-runners-bbbbb',
        why: 'expired',
        maxAge: '24h',
      },
    ]);
    expect(pl.status.intent?.deletes).toEqual([
      { name: 'runners-bbbbb', uid: 'uid-runners-bbbbb', reason: 'Expired' },
    ]);
    expect(pl.recheckAt).toEqual(later(22 * HOUR_AGO));
    const all = aged();
    expect(of(plan(observed(all.p, all.ms), NOW, seededRandom(1)), 'deleteVm')).toHaveLength(2);
  });

  it('drains an expired member first when the pool drains', () => {
    const { p, ms } = aged({ budget: 1, drain: '10m' });
    const pl = plan(observed(p, ms), NOW, seededRandom(1));
    expect(of(pl, 'deleteVm')).toEqual([]);
    expect(of(pl, 'updateVm').map((u) => [u.vm.metadata.name, u.why])).toEqual([
      ['runners-bbbbb', ['drainRequest']],
    ]);
  });
});
