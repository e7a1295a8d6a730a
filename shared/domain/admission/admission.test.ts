import { describe, expect, it } from 'vitest';
import type { RecordedTarget, ScaleDownPolicy, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { POOL_REVIEW, pool } from '../../../test/unit/builders.js';
import {
  admitRequest,
  afterDryRun,
  afterPoolRead,
  decidePoolWrite,
  decideScaleUpdate,
  explicitReplicasMessage,
  explicitScaleMessage,
} from './admission.js';
import { nameTooLong } from './validation.js';

function withRecorded(p: VirtualMachinePool, targets: RecordedTarget[]): VirtualMachinePool {
  return {
    ...p,
    metadata: {
      ...p.metadata,
      annotations: { [keys.scaleDownTargets]: JSON.stringify(targets) },
    },
  };
}

describe('decideScaleUpdate (/scale)', () => {
  it('denies an Explicit decrease with the reference message verbatim', () => {
    expect(decideScaleUpdate(pool({ scaleDownPolicy: 'Explicit' }), 3, 2)).toEqual({
      allowed: false,
      message:
        'VirtualMachinePool "runners" uses scaleDownPolicy Explicit: decreasing replicas through the scale subresource is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.',
    });
    expect(explicitScaleMessage('x')).toContain('scaleDownWith');
  });

  it.each<[string, ScaleDownPolicy | undefined, number, number, boolean]>([
    ['Explicit decrease to 0', 'Explicit', 1, 0, false],
    ['Explicit increase', 'Explicit', 2, 5, true],
    ['Explicit equal', 'Explicit', 3, 3, true],
    ['NewestFirst decrease', 'NewestFirst', 3, 1, true],
    ['OldestFirst decrease', 'OldestFirst', 3, 0, true],
    ['missing pool decrease', undefined, 3, 1, true],
  ])('%s → allowed %s', (_, policy, from, to, allowed) => {
    const p = policy === undefined ? undefined : pool({ scaleDownPolicy: policy });
    expect(decideScaleUpdate(p, from, to).allowed).toBe(allowed);
  });
});

describe('decidePoolWrite (pool CREATE/UPDATE)', () => {
  const explicit = (replicas: number): VirtualMachinePool =>
    pool({ scaleDownPolicy: 'Explicit', replicas });

  it('denies an invalid pool with the first violation', () => {
    const bad = pool({ name: 'n'.repeat(58), scaleDownPolicy: 'Explicit' });
    expect(decidePoolWrite(bad, undefined)).toEqual({
      allowed: false,
      message: nameTooLong('n'.repeat(58)),
    });
  });

  it('allows a valid CREATE, whatever the policy', () => {
    expect(decidePoolWrite(explicit(0), undefined)).toEqual({ allowed: true });
  });

  it('denies an unaddressed spec.replicas decrease under Explicit (deliberately unlike the reference)', () => {
    expect(decidePoolWrite(explicit(2), explicit(3))).toEqual({
      allowed: false,
      message: explicitReplicasMessage('runners'),
    });
    expect(explicitReplicasMessage('runners')).toBe(
      'VirtualMachinePool "runners" uses scaleDownPolicy Explicit: decreasing spec.replicas without naming the replicas to remove is not allowed. Remove specific virtual machines with the scaleDownWith subresource instead.',
    );
  });

  it.each<[string, VirtualMachinePool, VirtualMachinePool, boolean]>([
    ['Explicit increase', explicit(4), explicit(3), true],
    ['Explicit unchanged', explicit(3), explicit(3), true],
    ['NewestFirst decrease', pool({ replicas: 1 }), pool({ replicas: 3 }), true],
    [
      'switch to Explicit with a decrease',
      explicit(1),
      pool({ replicas: 3, scaleDownPolicy: 'NewestFirst' }),
      false,
    ],
    ['switch away from Explicit with a decrease', pool({ replicas: 1 }), explicit(3), true],
    [
      'decrease by 1 covered by 1 newly recorded target',
      withRecorded(explicit(2), [{ name: 'a', uid: 'ua' }]),
      explicit(3),
      true,
    ],
    [
      'decrease by 2 covered by one member named twice',
      withRecorded(explicit(1), [
        { name: 'a', uid: 'ua' },
        { name: 'a', uid: 'ua' },
      ]),
      explicit(3),
      false,
    ],
    [
      'decrease by 2 covered by 1 target only',
      withRecorded(explicit(1), [{ name: 'a', uid: 'ua' }]),
      explicit(3),
      false,
    ],
    [
      'decrease by 1 with a target that was already recorded',
      withRecorded(explicit(2), [{ name: 'a', uid: 'ua' }]),
      withRecorded(explicit(3), [{ name: 'a', uid: 'ua' }]),
      false,
    ],
    [
      'decrease by 1 with one old and one new target',
      withRecorded(explicit(2), [
        { name: 'a', uid: 'ua' },
        { name: 'b', uid: 'ub' },
      ]),
      withRecorded(explicit(3), [{ name: 'a', uid: 'ua' }]),
      true,
    ],
    [
      'a same-named newcomer (other uid) counts as new',
      withRecorded(explicit(2), [{ name: 'a', uid: 'ua2' }]),
      withRecorded(explicit(3), [{ name: 'a', uid: 'ua' }]),
      true,
    ],
    [
      'clearing recorded targets without a decrease',
      explicit(2),
      withRecorded(explicit(2), [{ name: 'a', uid: 'ua' }]),
      true,
    ],
  ])('%s → allowed %s', (_, next, old, allowed) => {
    expect(decidePoolWrite(next, old).allowed).toBe(allowed);
  });

  it('treats an unset spec.replicas as 0', () => {
    const old = explicit(1);
    const next = explicit(0);
    delete next.spec.replicas;
    expect(decidePoolWrite(next, old).allowed).toBe(false);
    delete old.spec.replicas;
    expect(decidePoolWrite(explicit(2), old).allowed).toBe(true);
  });
});

describe('admitRequest / afterDryRun / afterPoolRead (the pure adjudication)', () => {
  const base = POOL_REVIEW;
  const scale = (from: number, to: number) => ({
    ...base,
    subResource: 'scale',
    operation: 'UPDATE' as const,
    object: { spec: { replicas: to } },
    oldObject: { spec: { replicas: from } },
  });

  it.each<[string, string, Parameters<typeof admitRequest>[0]]>([
    [
      'another resource',
      'verdict',
      { ...base, resource: { ...base.resource, resource: 'pods' }, operation: 'CREATE' },
    ],
    ['another subresource', 'verdict', { ...base, subResource: 'status', operation: 'UPDATE' }],
    ['a DELETE', 'verdict', { ...base, operation: 'DELETE' }],
    ['a /scale increase', 'verdict', scale(1, 3)],
    ['a /scale decrease', 'readPool', scale(3, 1)],
    ['a pool CREATE', 'dryRunVm', { ...base, operation: 'CREATE', object: pool() }],
    [
      'an UPDATE with the same template',
      'verdict',
      { ...base, operation: 'UPDATE', object: pool({ replicas: 5 }), oldObject: pool() },
    ],
  ])('%s → %s', (_, kind, req) => {
    expect(admitRequest(req).kind).toBe(kind);
  });

  it('refuses what it cannot read, naming the field', () => {
    const step = admitRequest({ ...base, operation: 'CREATE', object: { spec: {} } });
    expect(step).toMatchObject({ kind: 'verdict', verdict: { allowed: false, code: 400 } });
    expect(step.kind === 'verdict' && !step.verdict.allowed && step.verdict.message).toMatch(
      /^invalid VirtualMachinePool: metadata|spec/,
    );
    expect(admitRequest({ ...scale(3, 1), object: 'x' })).toMatchObject({
      verdict: { allowed: false, message: 'expected autoscaling/v1 Scale objects in the review' },
    });
  });

  it('asks for a dry-run of the template VM under a generated name in the pool namespace', () => {
    const step = admitRequest({ ...base, operation: 'CREATE', object: pool() });
    expect(step).toMatchObject({
      kind: 'dryRunVm',
      namespace: 'ci',
      vm: { metadata: { generateName: 'runners-' } },
    });
  });

  it('relays the VM API: a refusal is the pool’s (422), an outage says what could not be checked (500)', () => {
    expect(afterDryRun({ ok: true, value: { warnings: [] } })).toEqual({ allowed: true });
    expect(afterDryRun({ ok: true, value: { warnings: ['unknown field "spec.cpus"'] } })).toEqual({
      allowed: true,
      warnings: ['unknown field "spec.virtualMachineTemplate.spec.cpus"'],
    });
    expect(afterDryRun({ ok: false, reason: 'invalid', message: 'cores: must be >= 1' })).toEqual({
      allowed: false,
      code: 422,
      message: 'the VirtualMachine this template produces is refused: cores: must be >= 1',
    });
    expect(afterDryRun({ ok: false, reason: 'transient', message: 'timeout' })).toMatchObject({
      code: 500,
    });
  });

  it('judges a /scale decrease on the pool read: Explicit refuses, a gone pool is no concern', () => {
    const step = { name: 'runners', from: 3, to: 1 };
    const explicit = pool({ scaleDownPolicy: 'Explicit' });
    expect(afterPoolRead({ ok: true, value: explicit }, step)).toMatchObject({
      allowed: false,
      code: 403,
    });
    expect(afterPoolRead({ ok: true, value: pool() }, step)).toEqual({ allowed: true });
    expect(afterPoolRead({ ok: false, reason: 'notFound', message: '' }, step)).toEqual({
      allowed: true,
    });
    expect(afterPoolRead({ ok: false, reason: 'transient', message: 'down' }, step)).toEqual({
      allowed: false,
      code: 500,
      message: 'cannot read VirtualMachinePool "runners": down',
    });
  });
});
