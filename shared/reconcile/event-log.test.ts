import { describe, expect, it } from 'vitest';
import type { Action } from '../domain/index.js';
import { newMember } from '../domain/index.js';
import type { PoolEvent } from '../kube/index.js';
import { pool } from '../../test/unit/builders.js';
import { fail, fakeKube } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';
import { EVENT_BURST, combined, eventLog } from './event-log.js';

const p = pool();
const log = testLog('event-log');
const create = (i: number): Action => ({
  kind: 'createVm',
  vm: newMember(p, `runners-${String(i).padStart(5, 'b')}`, 'h', []),
});
const notes = (f: ReturnType<typeof fakeKube>): string[] =>
  f.of('recordEvent').map((c) => (c.args[1] as PoolEvent).note);

describe('eventLog', () => {
  it('records the first EVENT_BURST of a reason at once and the rest as one Event on flush', async () => {
    const f = fakeKube({}, p);
    const events = eventLog(f.kube, p, log);
    for (let i = 0; i < EVENT_BURST + 3; i++) events.report(create(i), true);
    expect(notes(f)).toHaveLength(EVENT_BURST);
    await events.flush();
    expect(notes(f)).toHaveLength(EVENT_BURST + 1);
    expect(notes(f)[EVENT_BURST]).toMatch(/^\(combined from 3 similar events\) /);
  });

  it('counts each type and reason apart, and a refused Event fails nothing', async () => {
    const f = fakeKube({ recordEvent: () => fail('forbidden') }, p);
    const events = eventLog(f.kube, p, log);
    events.report(create(1), true);
    events.report(create(2), false, 'quota');
    await expect(events.flush()).resolves.toBeUndefined();
    expect(f.of('recordEvent').map((c) => (c.args[1] as PoolEvent).reason)).toEqual([
      'SuccessfulCreate',
      'FailedCreate',
    ]);
  });
});

describe('combined', () => {
  it('keeps the first event’s reason and cuts the notes within 1024 characters', () => {
    const ev: PoolEvent = {
      type: 'Normal',
      reason: 'R',
      note: 'x'.repeat(300),
      action: 'A',
    };
    const out = combined(ev, [ev, ev, ev, ev]);
    expect(out.reason).toBe('R');
    expect(out.note.startsWith('(combined from 4 similar events) ')).toBe(true);
    expect(out.note.endsWith(' …')).toBe(true);
    expect(out.note.length).toBeLessThanOrEqual(1024);
  });
});
