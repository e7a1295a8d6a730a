import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../api/index.js';
import { AWAITING_RESTART, keys } from '../../api/index.js';
import { at, MINUTE, pool, vm } from '../../../test/unit/builders.js';
import { disruptionOf, maxUnavailableOf } from './budget.js';
import {
  availableAt,
  awaitingRestart,
  runningLongestFirst,
  runningSince,
  stoppedOnPurpose,
  tryingSince,
} from './lifecycle.js';

const p = pool();
const t = (ms: number): number => Date.parse(at(ms));

/** A member in `phase` with a phase history of (phase, ms from NOW), created an hour ago. */
function member(
  phase: string | undefined,
  history: Array<[string, number]> = [],
  runPolicy?: string,
): VirtualMachine {
  const m = vm(p, 'runners-aaaaa', { created: at(-60 * MINUTE) });
  return {
    ...m,
    spec: runPolicy === undefined ? m.spec : { ...m.spec, runPolicy: runPolicy as 'Manual' },
    status: {
      ...(phase === undefined ? {} : { phase }),
      stats: { phasesTransitions: history.map(([ph, ms]) => ({ phase: ph, timestamp: at(ms) })) },
    },
  };
}

describe('tryingSince: the start of the current attempt to run', () => {
  it.each<[string, VirtualMachine, number | undefined]>([
    ['no status yet: since creation', member(undefined), t(-60 * MINUTE)],
    [
      'never out of Pending/Starting: since creation',
      member('Starting', [
        ['Pending', -59 * MINUTE],
        ['Starting', -58 * MINUTE],
      ]),
      t(-60 * MINUTE),
    ],
    [
      'restarted: since the Starting after Stopping',
      member('Starting', [
        ['Running', -50 * MINUTE],
        ['Stopping', -5 * MINUTE],
        ['Starting', -4 * MINUTE],
      ]),
      t(-4 * MINUTE),
    ],
    [
      'Degraded after Running: since Degraded',
      member('Degraded', [
        ['Running', -50 * MINUTE],
        ['Degraded', -3 * MINUTE],
      ]),
      t(-3 * MINUTE),
    ],
    [
      'history behind its phase: not judged',
      member('Starting', [['Running', -50 * MINUTE]]),
      undefined,
    ],
    ['Running: not trying', member('Running', [['Running', -1 * MINUTE]]), undefined],
    ['Stopped by a user: not trying', member('Stopped', [['Stopped', -1 * MINUTE]]), undefined],
    ['runPolicy Manual, Pending: stopped on purpose', member('Pending', [], 'Manual'), undefined],
    ['runPolicy AlwaysOff: stopped on purpose', member('Starting', [], 'AlwaysOff'), undefined],
  ])('%s', (_, m, want) => {
    expect(tryingSince(m)).toBe(want);
  });

  it('a Stopped AlwaysOn member is not stopped on purpose (the platform starts it again)', () => {
    expect(stoppedOnPurpose(member('Stopped', [], 'AlwaysOn'))).toBe(false);
    expect(stoppedOnPurpose(member('Stopped', [], 'AlwaysOnUnlessStoppedManually'))).toBe(true);
  });
});

describe('runningSince and availableAt', () => {
  it('uses the last Running transition, then creation', () => {
    const m = member('Running', [
      ['Running', -50 * MINUTE],
      ['Migrating', -10 * MINUTE],
      ['Running', -2 * MINUTE],
    ]);
    expect(runningSince(m)).toBe(t(-2 * MINUTE));
    expect(runningSince(member('Running'))).toBe(t(-60 * MINUTE));
    expect(availableAt(m, 60_000)).toBe(t(-1 * MINUTE));
    expect(availableAt(m, 0)).toBe(-Infinity);
    expect(availableAt(member('Starting'), 0)).toBeUndefined();
  });
});

describe('runningLongestFirst', () => {
  it('orders by the start of the current run, then by name; not Running counts as the epoch', () => {
    const named = (name: string, m: VirtualMachine): VirtualMachine => ({
      ...m,
      metadata: { ...m.metadata, name },
    });
    const recent = named('a', member('Running', [['Running', -2 * MINUTE]]));
    const early = named('b', member('Running', [['Running', -50 * MINUTE]]));
    const tieB = named('d', member('Running', [['Running', -30 * MINUTE]]));
    const tieA = named('c', member('Running', [['Running', -30 * MINUTE]]));
    const starting = named('e', member('Starting'));
    const order = runningLongestFirst([recent, tieB, early, starting, tieA]);
    expect(order.map((m) => m.metadata.name)).toEqual(['e', 'b', 'c', 'd', 'a']);
  });
});

describe('the disruption budget', () => {
  it.each<[number | string | undefined, number, number]>([
    [undefined, 4, Infinity],
    [2, 4, 2],
    ['50%', 4, 2],
    ['10%', 4, 1],
    ['100%', 3, 3],
    [0, 4, 1],
    ['oops', 4, 1],
  ])('maxUnavailable %s of %i replicas is %s', (v, replicas, want) => {
    const q = pool({ replicas });
    if (v !== undefined) q.spec.rollout = { maxUnavailable: v };
    expect(maxUnavailableOf(q)).toBe(want);
  });

  it('a percentage counts the standby too', () => {
    const q = pool({ replicas: 2 });
    q.spec.rollout = { maxUnavailable: '50%' };
    q.spec.standby = { replicas: 2, state: 'Stopped' };
    expect(maxUnavailableOf(q)).toBe(2);
  });

  it('weighs members: down, updating, none', () => {
    const patched = { [keys.patchedTemplateHash]: 'h2' };
    const up = vm(p, 'a');
    expect(disruptionOf(up, 'h2')).toBe('none');
    expect(disruptionOf(vm(p, 'a', { phase: 'Starting' }), 'h2')).toBe('down');
    expect(disruptionOf(vm(p, 'a', { terminating: true }), 'h2')).toBe('down');
    expect(disruptionOf(vm(p, 'a', { annotations: patched }), 'h2')).toBe('updating');
    expect(disruptionOf(vm(p, 'a', { annotations: patched, phase: 'Stopped' }), 'h2')).toBe('down');
    expect(disruptionOf(member('Stopped', [], 'AlwaysOff'), 'h2')).toBe('none');
    // The runners template is AlwaysOn: Stopped means down; a user may stop the default policy.
    expect(disruptionOf(vm(p, 'a', { phase: 'Stopped' }), 'h2')).toBe('down');
    expect(disruptionOf(member('Stopped', [], 'AlwaysOnUnlessStoppedManually'), 'h2')).toBe('none');
  });
});

describe('awaitingRestart', () => {
  it('awaitingRestart only for a True condition', () => {
    const p = pool();
    expect(
      awaitingRestart(vm(p, 'a', { conditions: [{ type: AWAITING_RESTART, status: 'True' }] })),
    ).toBe(true);
    expect(
      awaitingRestart(vm(p, 'a', { conditions: [{ type: AWAITING_RESTART, status: 'False' }] })),
    ).toBe(false);
    expect(awaitingRestart(vm(p, 'a'))).toBe(false);
  });
});
