import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import {
  HOUR,
  NOW,
  pool,
  REVISION as H,
  onRevision as on,
  conditionOf as cond,
} from '../../../test/unit/builders.js';
import { computeStatus, normalizeIntent, sameStatus } from './status.js';

describe('computeStatus', () => {
  it('is stable: recomputing from its own output with the same members is the same status', () => {
    const p = pool({ replicas: 2 });
    const members = [on(p, 'a'), on(p, 'b', { phase: 'Pending' })];
    const s1 = computeStatus({
      pool: p,
      members,
      hash: H,
      intent: {},
      now: new Date(NOW.getTime() - HOUR),
    });
    const s2 = computeStatus({
      pool: { ...p, status: s1 },
      members,
      hash: H,
      intent: {},
      now: NOW,
    });
    expect(sameStatus(s1, s2)).toBe(true);
  });
});

describe('helpers', () => {
  it.each([
    [{}, undefined],
    [{ creates: [], deletes: [], bindings: [] }, undefined],
    [{ deletes: [{ name: 'a', uid: 'u' }] }, { deletes: [{ name: 'a', uid: 'u' }] }],
    [
      { bindings: [{ vm: 'v', template: 't', disk: 'd' }], creates: [] },
      { bindings: [{ vm: 'v', template: 't', disk: 'd' }] },
    ],
  ])('normalizeIntent(%j) = %j', (intent, want) => {
    expect(normalizeIntent(intent)).toEqual(want);
  });

  it.each<[unknown, unknown, boolean]>([
    [undefined, {}, true],
    [{ replicas: 1, selector: 's' }, { selector: 's', replicas: 1 }, true],
    [{ intent: {} }, {}, true],
    [{ replicas: 1 }, { replicas: 2 }, false],
    [
      { conditions: [{ type: 'A', status: 'True' }] },
      { conditions: [{ type: 'A', status: 'False' }] },
      false,
    ],
  ])('sameStatus(%j, %j) = %s', (a, b, want) => {
    expect(sameStatus(a as never, b as never)).toBe(want);
  });
});

describe('computeStatus: protection and drains', () => {
  it.each([
    {
      what: 'the held surplus: Progressing False ScaleDownBlockedByProtection',
      replicas: 1,
      leaving: { protectedHeld: 2, draining: 0 },
      progressing: {
        status: 'False',
        reason: 'ScaleDownBlockedByProtection',
        message:
          'Scale-down to 1 replicas waits: 2 surplus replicas are protected (annotation vmpool.virtualization.deckhouse.io/protected: "true").',
      },
    },
    {
      what: 'draining members, counted in replicas, said while converging',
      replicas: 2,
      leaving: { protectedHeld: 0, draining: 1 },
      progressing: {
        status: 'True',
        reason: 'ReplicasProgressing',
        message: 'Converging to 2 replicas (currently 3, 1 draining).',
      },
    },
  ])('reports $what', ({ replicas, leaving, progressing }) => {
    const p = pool({ replicas });
    const s = computeStatus({
      pool: p,
      members: [on(p, 'a'), on(p, 'b'), on(p, 'c')],
      hash: H,
      intent: {},
      now: NOW,
      leaving,
    });
    expect([s.replicas, s.heldReplicas, s.drainingReplicas]).toEqual([
      3,
      leaving.protectedHeld,
      leaving.draining,
    ]);
    expect(cond(s.conditions, 'Progressing')).toMatchObject(progressing);
  });

  it('reports zeros by default, every count: no knob set, no standby, no healing', () => {
    const p = pool({ replicas: 1 });
    const s = computeStatus({ pool: p, members: [on(p, 'a')], hash: H, intent: {}, now: NOW });
    expect([
      s.protectedReplicas,
      s.heldReplicas,
      s.drainingReplicas,
      s.standbyReplicas,
      s.readyStandbyReplicas,
      s.unhealthyReplicas,
    ]).toEqual([0, 0, 0, 0, 0, 0]);
    expect(cond(s.conditions, 'Progressing')).toBeUndefined();
  });

  it('counts protected members in protectedReplicas, apart from the surplus held (heldReplicas)', () => {
    const p = pool({ replicas: 1 });
    const guard = (vm: ReturnType<typeof on>) => ({
      ...vm,
      metadata: { ...vm.metadata, annotations: { [keys.protected]: 'true' } },
    });
    const members = [guard(on(p, 'a')), guard(on(p, 'b')), on(p, 'c')];
    const s = computeStatus({
      pool: p,
      members,
      hash: H,
      intent: {},
      now: NOW,
      leaving: { protectedHeld: 1, draining: 0 },
    });
    expect([s.protectedReplicas, s.heldReplicas]).toEqual([2, 1]);
  });
});
