import { describe, expect, it } from 'vitest';
import type { PoolStatus } from '../../api/index.js';
import { NOW, at, pool } from '../../../test/unit/builders.js';
import {
  FORBIDDEN,
  INTENT_NOT_PERSISTED,
  blockedStatus,
  blockingCondition,
  holdBlocked,
  intentPersisted,
} from './blocked.js';

const synced = (status: 'True' | 'False', reason: string, since = at(-60_000)) => ({
  type: 'Synced',
  status,
  reason,
  message: '',
  lastTransitionTime: since,
});

describe('intentPersisted', () => {
  it('holds trivially when nothing was recorded', () => {
    expect(intentPersisted({}, undefined)).toBe(true);
    expect(intentPersisted({ intent: { creates: [] } }, {})).toBe(true);
  });

  it('holds when the stored status carries the same intent, whatever the key order', () => {
    const written: PoolStatus = {
      intent: { creates: ['p-bbbbb'], deletes: [{ name: 'p-ccccc', uid: 'u1' }] },
    };
    const stored: PoolStatus = {
      intent: { deletes: [{ uid: 'u1', name: 'p-ccccc' }], creates: ['p-bbbbb'] },
    };
    expect(intentPersisted(written, stored)).toBe(true);
  });

  it('fails when a pruning schema dropped the intent', () => {
    expect(intentPersisted({ intent: { creates: ['p-bbbbb'] } }, { replicas: 0 })).toBe(false);
    expect(intentPersisted({ intent: { creates: ['p-bbbbb'] } }, undefined)).toBe(false);
  });

  it('fails when part of it is missing', () => {
    const written: PoolStatus = {
      intent: { creates: ['p-bbbbb'], bindings: [{ vm: 'p-bbbbb', template: 't', disk: 'd' }] },
    };
    expect(intentPersisted(written, { intent: { creates: ['p-bbbbb'] } })).toBe(false);
  });
});

describe('blockedStatus', () => {
  it('sets Synced=False with the reason, keeping every other field and condition', () => {
    const p = pool({
      generation: 4,
      status: {
        replicas: 2,
        intent: { creates: ['x'] },
        conditions: [
          { type: 'Available', status: 'True', reason: 'AllReplicasReady', message: '' },
          synced('True', 'PoolSynced'),
        ],
      },
    });
    const s = blockedStatus(p, FORBIDDEN, 'why', NOW);
    expect(s?.replicas).toBe(2);
    expect(s?.intent).toEqual({ creates: ['x'] });
    expect(s?.conditions?.map((c) => c.type)).toEqual(['Available', 'Synced']);
    expect(blockingCondition(s)).toEqual({
      type: 'Synced',
      status: 'False',
      reason: FORBIDDEN,
      message: 'why',
      lastTransitionTime: at(0),
      observedGeneration: 4,
    });
  });

  it('keeps the transition time when Synced was already False', () => {
    const p = pool({ status: { conditions: [synced('False', 'RolloutInProgress', at(-5000))] } });
    expect(
      blockingCondition(blockedStatus(p, INTENT_NOT_PERSISTED, 'm', NOW))?.lastTransitionTime,
    ).toBe(at(-5000));
  });

  it('is undefined when the pool is already blocked for that reason (no write, no Event)', () => {
    const p = pool({ status: { conditions: [synced('False', FORBIDDEN)] } });
    expect(blockedStatus(p, FORBIDDEN, 'another object named', NOW)).toBeUndefined();
    expect(blockedStatus(p, INTENT_NOT_PERSISTED, 'm', NOW)).toBeDefined();
  });
});

describe('holdBlocked', () => {
  const planned: PoolStatus = {
    replicas: 0,
    intent: { creates: ['a'] },
    conditions: [{ ...synced('True', 'PoolSynced'), observedGeneration: 3 }],
  };

  it('keeps a stored blocking condition while the plan still acts', () => {
    const stored: PoolStatus = { conditions: [synced('False', INTENT_NOT_PERSISTED)] };
    const held = holdBlocked(stored, planned, true);
    expect(held.conditions).toEqual([
      { ...synced('False', INTENT_NOT_PERSISTED), observedGeneration: 3 },
    ]);
    expect(held.intent).toEqual(planned.intent);
  });

  it('lets the plan speak once it has nothing to do', () => {
    const stored: PoolStatus = { conditions: [synced('False', FORBIDDEN)] };
    expect(holdBlocked(stored, planned, false)).toBe(planned);
  });

  it('does not hold conditions that are not blocks', () => {
    const stored: PoolStatus = { conditions: [synced('False', 'RolloutInProgress')] };
    expect(holdBlocked(stored, planned, true)).toBe(planned);
    expect(holdBlocked(undefined, planned, true)).toBe(planned);
  });
});
