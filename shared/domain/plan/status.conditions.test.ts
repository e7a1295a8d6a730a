import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  at,
  HOUR,
  NOW,
  pool,
  vm,
  REVISION as H,
  AWAITING_RESTART_TRUE as restart,
  onRevision as on,
  conditionOf as cond,
} from '../../../test/unit/builders.js';
import { rfc3339 } from '../formats/index.js';
import { computeStatus } from './status.js';

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
});
