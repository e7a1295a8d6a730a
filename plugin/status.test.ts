import { describe, expect, it } from 'vitest';
import { AWAITING_RESTART, keys } from '../shared/api/index.js';
import { age, table } from './context.js';
import { statusLines } from './status.js';
import { HOUR, NOW, at, pool, steady } from '../test/unit/builders.js';

describe('kubectl vmpool status layout', () => {
  it('prints counts, conditions, members with their flags, and the newest Events', () => {
    const p = pool({
      status: {
        replicas: 2,
        readyReplicas: 1,
        desiredTemplateHash: 'h1',
        conditions: [{ type: 'Available', status: 'False', reason: 'X', message: 'one is down' }],
      },
    });
    const a = steady(p, 'runners-aaaaa', {
      labels: { [keys.templateHash]: 'h1' },
      annotations: { [keys.protected]: 'true' },
      created: at(-2 * HOUR),
    });
    const b = steady(p, 'runners-bbbbb', {
      annotations: { [keys.drainRequested]: at(-60_000) },
      conditions: [{ type: AWAITING_RESTART, status: 'True' }],
      phase: 'Pending',
    });
    const lines = statusLines(
      p,
      [b.vm, a.vm],
      [
        {
          type: 'Normal',
          reason: 'SuccessfulCreate',
          message: 'Created.',
          lastTimestamp: at(-30_000),
        },
      ],
      NOW,
    );
    expect(lines[1]).toBe('Replicas:  3 desired, 2 current, 1 ready, 0 updated, 0 restart pending');
    // Members by flag; the surplus held is status.heldReplicas (0 here).
    expect(lines[2]).toBe('Fleet:     1 protected (0 surplus held), 1 draining, 0 standby');
    expect(lines).toContain('  Available=False X: one is down');
    const rows = lines.filter((l) => l.startsWith('runners-'));
    expect(rows[0]).toMatch(
      /^runners-aaaaa\s+Running\s+yes\s+no\s+runners-aaaaa-root,\S+\s+2h\s+protected$/,
    );
    expect(rows[1]).toMatch(/^runners-bbbbb\s+Pending\s+no\s+yes\s+.*\s+60m\s+draining$/);
    expect(lines.at(-1)).toMatch(/^ {2}30s\s+Normal\s+SuccessfulCreate\s+Created\.$/);
  });

  it('pads columns as kubectl does and writes ages as kubectl does', () => {
    expect(
      table([
        ['A', 'BB'],
        ['ccc', 'd'],
      ]),
    ).toEqual(['A     BB', 'ccc   d']);
    expect([age(at(-5_000), NOW), age(at(-10 * 60_000), NOW), age(at(-3 * HOUR), NOW)]).toEqual([
      '5s',
      '10m',
      '3h',
    ]);
    expect(age(at(-72 * HOUR), NOW)).toBe('3d');
    expect(age(undefined, NOW)).toBe('<unknown>');
  });
});
