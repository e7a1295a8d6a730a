import { describe, expect, it } from 'vitest';
import { NOW, pool } from '../../../test/unit/builders.js';
import { claim, withClaims } from '../../../test/unit/claim-builders.js';
import type { Action } from './actions.js';
import {
  boundStatus,
  claimPhases,
  expiryOf,
  orphanStatus,
  pendingMessage,
  pendingStatus,
  statusWrite,
} from './claim-status.js';

const vm = { metadata: { name: 'runners-aaaaa', uid: 'vm-uid' }, spec: {} } as Parameters<
  typeof boundStatus
>[1];

describe('expiryOf', () => {
  it("is the claim's ttl capped by the pool's maxTTL, maxTTL alone, or never", () => {
    const p = withClaims(pool(), { maxTTL: '1h' });
    expect(expiryOf(claim('a', { ttl: '10m' }), p, NOW)).toBe('2025-01-01T12:10:00Z');
    expect(expiryOf(claim('a', { ttl: '3h' }), p, NOW)).toBe('2025-01-01T13:00:00Z');
    expect(expiryOf(claim('a'), p, NOW)).toBe('2025-01-01T13:00:00Z');
    expect(expiryOf(claim('a'), pool(), NOW)).toBeUndefined();
  });
});

describe('boundStatus', () => {
  it('names the member, when and until when; a stored Bound status to the same member is kept', () => {
    const s = boundStatus(claim('a', { ttl: '30m' }), vm, pool(), NOW);
    expect(s).toMatchObject({
      phase: 'Bound',
      virtualMachineName: 'runners-aaaaa',
      virtualMachineUid: 'vm-uid',
      boundAt: '2025-01-01T12:00:00Z',
      expiresAt: '2025-01-01T12:30:00Z',
      conditions: [{ type: 'Bound', status: 'True', reason: 'Bound' }],
    });
    const later = new Date(NOW.getTime() + 60_000);
    expect(boundStatus(claim('a', { ttl: '30m', status: s }), vm, pool(), later)).toBe(s);
  });
});

describe('statusWrite', () => {
  it('writes only what differs from the stored status', () => {
    const s = pendingStatus(claim('a'), 'NoIdleMember', 'm', NOW);
    expect(statusWrite(claim('a'), s)).toMatchObject({ kind: 'claimStatus', phase: 'Pending' });
    expect(statusWrite(claim('a', { status: s }), s)).toBeUndefined();
  });

  it('keeps the transition time while the condition keeps its status', () => {
    const first = pendingStatus(claim('a'), 'NoIdleMember', 'm', NOW);
    const later = new Date(NOW.getTime() + 60_000);
    const next = pendingStatus(claim('a', { status: first }), 'PoolAtMaximum', 'n', later);
    expect(next.conditions?.[0]?.lastTransitionTime).toBe('2025-01-01T12:00:00Z');
    expect(next.conditions?.[0]?.reason).toBe('PoolAtMaximum');
  });
});

describe('claimPhases', () => {
  it("counts a pool's claims by phase once the plan's writes landed; no phase counts as Pending", () => {
    const bound = claim('b', { status: { phase: 'Bound' } });
    const write = statusWrite(claim('c'), pendingStatus(claim('c'), 'NoIdleMember', 'm', NOW));
    const writes: Action[] = write === undefined ? [] : [write];
    const others = [claim('x', { pool: 'other' }), claim('d', { deleting: true })];
    expect(claimPhases('runners', [bound, claim('c'), claim('e'), ...others], writes)).toEqual({
      Pending: 2,
      Bound: 1,
      Expired: 0,
      Lost: 0,
    });
  });
});

describe('orphanStatus', () => {
  it('Pending with PoolNotFound, Lost once Bound, nothing for an ended or deleted claim', () => {
    expect(orphanStatus(claim('a'), NOW)?.claim.status).toMatchObject({
      phase: 'Pending',
      conditions: [
        { reason: 'PoolNotFound', message: pendingMessage('PoolNotFound', 'runners', 0) },
      ],
    });
    const bound = claim('b', { status: { phase: 'Bound', virtualMachineName: 'runners-b' } });
    expect(orphanStatus(bound, NOW)?.claim.status).toMatchObject({
      phase: 'Lost',
      virtualMachineName: 'runners-b',
    });
    expect(orphanStatus(claim('c', { status: { phase: 'Expired' } }), NOW)).toBeUndefined();
    expect(orphanStatus(claim('d', { deleting: true }), NOW)).toBeUndefined();
  });
});
