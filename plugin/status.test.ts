import { describe, expect, it } from 'vitest';
import type { VirtualMachineClaim } from '../shared/api/index.js';
import { AWAITING_RESTART, keys } from '../shared/api/index.js';
import { age, table } from './context.js';
import { statusLines } from './status.js';
import { templateHash } from '../shared/domain/index.js';
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

  it('shows the claim counts, who holds each claimed member, and why a claim still waits', () => {
    const hash = templateHash(pool().spec.virtualMachineTemplate);
    const base = pool({
      status: { replicas: 3, claimedReplicas: 1, idleReplicas: 2, desiredTemplateHash: hash },
    });
    const p = {
      ...base,
      spec: { ...base.spec, claims: { minIdle: 2, maxReplicas: 6, onRelease: 'Delete' as const } },
    };
    const held = steady(p, 'runners-aaaaa', {
      annotations: { [keys.claimedBy]: 'job-1', [keys.claimUid]: 'u-job-1' },
      labels: { [keys.claimed]: 'true' },
    });
    const idle = steady(p, 'runners-bbbbb');
    const claim = (name: string, created: string, status: object, holder?: string) =>
      ({
        metadata: { name, namespace: 'ci', uid: `u-${name}`, creationTimestamp: created },
        spec: { poolName: 'runners', ...(holder === undefined ? {} : { holder }) },
        status,
      }) as VirtualMachineClaim;
    const claims = [
      claim('job-2', at(-10_000), {
        phase: 'Pending',
        conditions: [{ type: 'Bound', status: 'False', reason: 'NoIdleMember' }],
      }),
      claim('job-1', at(-60_000), { phase: 'Bound', virtualMachineName: 'runners-aaaaa' }, 'alice'),
    ];
    const lines = statusLines(p, [held.vm, idle.vm], [], NOW, claims);
    expect(lines[3]).toBe(
      'Claims:    1 claimed, 2 idle (minIdle 2, maxReplicas 6, onRelease Delete)',
    );
    const rows = lines.filter((l) => l.startsWith('runners-'));
    expect(rows[0]).toMatch(/\s+claimed by job-1 \(alice\)$/);
    expect(rows[1]).toMatch(/\s+idle$/);
    const table = lines.slice(lines.findIndex((l) => l.startsWith('CLAIM ')));
    expect(table[0]).toMatch(/^CLAIM\s+PHASE\s+VM\s+HOLDER\s+AGE\s+WHY$/);
    // Oldest first.
    expect(table[1]).toMatch(/^job-1\s+Bound\s+runners-aaaaa\s+alice\s+60s$/);
    expect(table[2]).toMatch(/^job-2\s+Pending\s+<none>\s+<none>\s+10s\s+NoIdleMember$/);
  });

  it('says nothing of claims for a pool without them', () => {
    const lines = statusLines(pool(), [], [], NOW);
    expect(lines.some((l) => l.startsWith('Claims:') || l.startsWith('CLAIM'))).toBe(false);
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
