import { describe, expect, it } from 'vitest';
import type { Condition, VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { AWAITING_RESTART, keys } from '../../api/index.js';
import { at, HOUR, NOW, pool, vm } from '../../../test/unit/builders.js';
import { rfc3339 } from '../formats/index.js';
import { computeStatus, countMembers, normalizeIntent, sameStatus } from './status.js';

const H = 'abcd1234';
const restart: Condition[] = [{ type: AWAITING_RESTART, status: 'True' }];

function on(p: VirtualMachinePool, name: string, o: Parameters<typeof vm>[2] = {}): VirtualMachine {
  return vm(p, name, {
    ...o,
    labels: { [keys.templateHash]: H, ...o.labels },
    annotations: { [keys.patchedTemplateHash]: H, ...o.annotations },
  });
}

function cond(conds: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conds?.find((c) => c.type === type);
}

describe('countMembers', () => {
  it('counts Terminating members only in replicas', () => {
    const p = pool();
    const members = [
      on(p, 'a'),
      on(p, 'b', { terminating: true }),
      on(p, 'c', { phase: 'Stopped' }),
      vm(p, 'd', { labels: { [keys.templateHash]: 'old' } }),
      on(p, 'e', { conditions: restart }),
      vm(p, 'f', { annotations: { [keys.patchedTemplateHash]: H }, conditions: restart }),
    ];
    expect(countMembers(members, H)).toEqual({
      replicas: 6,
      ready: 4,
      available: 4,
      updated: 3,
      restartPending: 2,
      live: 5,
    });
  });
});

describe('computeStatus', () => {
  it('steady state: counts, selector, hash, Available True, Progressing absent, Synced True', () => {
    const p = pool({ replicas: 2, generation: 7 });
    const s = computeStatus({
      pool: p,
      members: [on(p, 'a'), on(p, 'b')],
      hash: H,
      intent: {},
      now: NOW,
    });
    expect(s).toMatchObject({
      observedGeneration: 7,
      replicas: 2,
      readyReplicas: 2,
      updatedReplicas: 2,
      restartPendingReplicas: 0,
      desiredTemplateHash: H,
      selector: 'vmpool.virtualization.deckhouse.io/pool-uid=pool-uid-1',
    });
    expect(s.conditions).toEqual([
      {
        type: 'Available',
        status: 'True',
        reason: 'AllReplicasReady',
        message: '',
        observedGeneration: 7,
        lastTransitionTime: rfc3339(NOW),
      },
      {
        type: 'Synced',
        status: 'True',
        reason: 'PoolSynced',
        message: '',
        observedGeneration: 7,
        lastTransitionTime: rfc3339(NOW),
      },
    ]);
    expect(s.intent).toBeUndefined();
  });

  it.each<
    [
      string,
      number,
      (p: VirtualMachinePool) => VirtualMachine[],
      Partial<Record<'Available' | 'Progressing' | 'Synced', [string, string, string] | null>>,
    ]
  >([
    [
      'a Stopped member',
      1,
      (p) => [on(p, 'a', { phase: 'Stopped' })],
      {
        Available: ['False', 'InsufficientReadyReplicas', 'Only 0 of 1 replicas are ready.'],
        Progressing: null,
      },
    ],
    [
      'scaling up',
      3,
      (p) => [on(p, 'a')],
      {
        Available: ['False', 'InsufficientReadyReplicas', 'Only 1 of 3 replicas are ready.'],
        Progressing: ['True', 'ReplicasProgressing', 'Converging to 3 replicas (currently 1).'],
      },
    ],
    [
      'scaling down with a Terminating member',
      1,
      (p) => [on(p, 'a'), on(p, 'b', { terminating: true })],
      {
        Available: ['True', 'AllReplicasReady', ''],
        Progressing: ['True', 'ReplicasProgressing', 'Converging to 1 replicas (currently 2).'],
      },
    ],
    [
      '0 replicas and no members',
      0,
      () => [],
      {
        Available: ['True', 'AllReplicasReady', ''],
        Synced: ['True', 'PoolSynced', ''],
      },
    ],
    [
      'a rollout in progress',
      2,
      (p) => [on(p, 'a'), vm(p, 'b', { labels: { [keys.templateHash]: 'old' } })],
      {
        Synced: [
          'False',
          'RolloutInProgress',
          '1 of 2 replicas are on the current virtualMachineTemplate.',
        ],
      },
    ],
    [
      'a restart pending approval',
      2,
      (p) => [
        on(p, 'a'),
        vm(p, 'b', {
          labels: { [keys.templateHash]: 'old' },
          annotations: { [keys.patchedTemplateHash]: H },
          conditions: restart,
        }),
      ],
      {
        Synced: [
          'False',
          'RestartPendingApproval',
          '1 of 2 replicas await a restart to apply configuration.',
        ],
      },
    ],
    [
      'a Migrating member',
      1,
      (p) => [on(p, 'a', { phase: 'Migrating' })],
      {
        Available: ['False', 'InsufficientReadyReplicas', 'Only 0 of 1 replicas are ready.'],
      },
    ],
  ])('%s', (_, replicas, members, want) => {
    const p = pool({ replicas });
    const s = computeStatus({ pool: p, members: members(p), hash: H, intent: {}, now: NOW });
    for (const [type, expected] of Object.entries(want)) {
      const c = cond(s.conditions, type);
      if (expected === null) expect(c).toBeUndefined();
      else expect([c?.status, c?.reason, c?.message]).toEqual(expected);
    }
  });

  it('treats unset spec.replicas as 0', () => {
    const p = pool();
    delete p.spec.replicas;
    const s = computeStatus({ pool: p, members: [], hash: H, intent: {}, now: NOW });
    expect(cond(s.conditions, 'Available')?.status).toBe('True');
    expect(cond(s.conditions, 'Progressing')).toBeUndefined();
  });

  it('keeps lastTransitionTime while a status is unchanged, even when the reason or message changes', () => {
    const p = pool({ replicas: 3 });
    const first = computeStatus({
      pool: p,
      members: [on(p, 'a')],
      hash: H,
      intent: {},
      now: new Date(NOW.getTime() - HOUR),
    });
    const later = computeStatus({
      pool: { ...p, status: first },
      members: [on(p, 'a'), on(p, 'b')],
      hash: H,
      intent: {},
      now: NOW,
    });
    expect(cond(later.conditions, 'Available')?.message).toBe('Only 2 of 3 replicas are ready.');
    expect(cond(later.conditions, 'Available')?.lastTransitionTime).toBe(at(-HOUR));
    expect(cond(later.conditions, 'Progressing')?.lastTransitionTime).toBe(at(-HOUR));
  });

  it('sets a new lastTransitionTime when a status flips', () => {
    const p = pool({ replicas: 1 });
    const first = computeStatus({
      pool: p,
      members: [on(p, 'a', { phase: 'Starting' })],
      hash: H,
      intent: {},
      now: new Date(NOW.getTime() - HOUR),
    });
    const later = computeStatus({
      pool: { ...p, status: first },
      members: [on(p, 'a')],
      hash: H,
      intent: {},
      now: NOW,
    });
    expect(cond(later.conditions, 'Available')).toMatchObject({
      status: 'True',
      lastTransitionTime: rfc3339(NOW),
    });
    expect(cond(later.conditions, 'Synced')?.lastTransitionTime).toBe(at(-HOUR));
  });

  it('records a normalized intent and drops an empty one, keeping unknown status fields', () => {
    const p = pool({ replicas: 1, status: { intent: { creates: ['x'] }, extra: 'kept' } });
    const withIntent = computeStatus({
      pool: p,
      members: [],
      hash: H,
      intent: { creates: ['runners-bbbbb'], deletes: [], bindings: [] },
      now: NOW,
    });
    expect(withIntent.intent).toEqual({ creates: ['runners-bbbbb'] });
    expect((withIntent as Record<string, unknown>).extra).toBe('kept');
    expect(
      computeStatus({ pool: p, members: [], hash: H, intent: { creates: [] }, now: NOW }).intent,
    ).toBeUndefined();
  });

  it('omits observedGeneration when the pool has no generation', () => {
    const p = pool();
    delete p.metadata.generation;
    const s = computeStatus({ pool: p, members: [], hash: H, intent: {}, now: NOW });
    expect('observedGeneration' in s).toBe(false);
    expect(s.conditions?.every((c) => c.observedGeneration === undefined)).toBe(true);
  });

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
