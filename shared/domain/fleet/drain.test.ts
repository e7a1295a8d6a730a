import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { at, MINUTE, NOW, pool, SECOND, vm } from '../../../test/unit/builders.js';
import {
  byCancelOrder,
  cancelDrain,
  drainStep,
  drainTimeoutMs,
  isDraining,
  requestDrain,
} from './drain.js';
import { nameOf } from './membership.js';

const p = pool();
const member = (name: string, annotations: Record<string, string> = {}): VirtualMachine =>
  vm(p, name, { annotations });

describe('drainTimeoutMs', () => {
  it.each<[string | undefined, number | undefined]>([
    [undefined, undefined],
    ['0', undefined],
    ['0s', undefined],
    ['nonsense', undefined],
    ['30s', 30 * SECOND],
    ['10m', 10 * MINUTE],
    ['1h30m', 90 * MINUTE],
  ])('%j → %j', (text, want) => {
    const q = pool();
    if (text !== undefined) q.spec.scaleDown = { drainTimeout: text };
    expect(drainTimeoutMs(q)).toBe(want);
  });
});

describe('drainStep', () => {
  const T = 10 * MINUTE;
  it.each<[string, Record<string, string>, number | undefined, string]>([
    ['no drain configured: delete at once', {}, undefined, 'delete'],
    ['drain configured, not asked yet: ask', {}, T, 'request'],
    [
      'asked, not drained, before the deadline: wait',
      { [keys.drainRequested]: at(-MINUTE) },
      T,
      'wait',
    ],
    [
      'asked and drained: delete',
      { [keys.drainRequested]: at(-MINUTE), [keys.drained]: 'true' },
      T,
      'delete',
    ],
    [
      'asked, drained "false": wait',
      { [keys.drainRequested]: at(-MINUTE), [keys.drained]: 'false' },
      T,
      'wait',
    ],
    ['asked, deadline reached: timed out', { [keys.drainRequested]: at(-T) }, T, 'timedOut'],
    [
      'asked, timeout since removed from the spec: delete',
      { [keys.drainRequested]: at(-MINUTE) },
      undefined,
      'delete',
    ],
    ['asked with an unreadable time: ask again', { [keys.drainRequested]: 'soon' }, T, 'request'],
  ])('%s', (_what, annotations, timeout, want) => {
    expect(drainStep(member('runners-aaaaa', annotations), timeout, NOW).kind).toBe(want);
  });

  it('waits until exactly request time + timeout', () => {
    const step = drainStep(
      member('runners-aaaaa', { [keys.drainRequested]: at(-MINUTE) }),
      10 * MINUTE,
      NOW,
    );
    expect(step).toEqual({ kind: 'wait', deadline: new Date(NOW.getTime() + 9 * MINUTE) });
  });

  it('says whether a deletion follows a drain', () => {
    expect(
      drainStep(member('a', { [keys.drainRequested]: at(0), [keys.drained]: 'true' }), MINUTE, NOW),
    ).toEqual({ kind: 'delete', drained: true });
    expect(drainStep(member('a'), undefined, NOW)).toEqual({ kind: 'delete', drained: false });
  });
});

describe('drain marks', () => {
  it('a request stamps the time (second precision) and drops a stale drained mark', () => {
    const m = requestDrain(member('runners-aaaaa', { [keys.drained]: 'true', other: 'x' }), NOW);
    expect(m.metadata.annotations).toEqual({
      [keys.drainRequested]: '2025-01-01T12:00:00Z',
      other: 'x',
    });
    expect(isDraining(m)).toBe(true);
  });

  it('a cancel removes both marks and nothing else', () => {
    const m = cancelDrain(
      member('runners-aaaaa', { [keys.drainRequested]: at(0), [keys.drained]: 'true', other: 'x' }),
    );
    expect(m.metadata.annotations).toEqual({ other: 'x' });
    expect(isDraining(m)).toBe(false);
  });

  it('a scale-up takes back not-yet-drained members first, then the latest asked, then by name', () => {
    const ms = [
      member('runners-d1111', { [keys.drainRequested]: at(-5 * MINUTE), [keys.drained]: 'true' }),
      member('runners-e1111', { [keys.drainRequested]: at(-5 * MINUTE) }),
      member('runners-f1111', { [keys.drainRequested]: at(-MINUTE) }),
      member('runners-b1111'),
      member('runners-a1111'),
    ];
    expect([...ms].sort(byCancelOrder).map(nameOf)).toEqual([
      'runners-a1111',
      'runners-b1111',
      'runners-f1111',
      'runners-e1111',
      'runners-d1111',
    ]);
  });
});
