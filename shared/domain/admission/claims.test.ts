import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../../api/index.js';
import { CLAIM_GROUP, CLAIM_VERSION, claimCelMessages } from '../../api/index.js';
import { pool } from '../../../test/unit/builders.js';
import type { AdmissionStep } from './admission.js';
import { admitRequest } from './admission.js';
import { admitClaim, validateClaims } from './claims.js';

const claim = (spec: Record<string, unknown>) => ({
  apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
  kind: 'VirtualMachineClaim',
  metadata: { name: 'job-1', namespace: 'ci' },
  spec,
});

function review(
  operation: AdmissionRequest['operation'],
  object: unknown,
  oldObject?: unknown,
): AdmissionRequest {
  return {
    uid: 'u1',
    kind: { group: CLAIM_GROUP, version: CLAIM_VERSION, kind: 'VirtualMachineClaim' },
    resource: { group: CLAIM_GROUP, version: CLAIM_VERSION, resource: 'virtualmachineclaims' },
    namespace: 'ci',
    name: 'job-1',
    operation,
    object,
    ...(oldObject === undefined ? {} : { oldObject }),
  };
}

const messageOf = (v: ReturnType<typeof admitClaim>): string | undefined =>
  v.allowed ? undefined : v.message;

describe('admitClaim', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['no poolName', {}, 'spec.poolName: is required: the VirtualMachinePool to take a member of'],
    ['an empty poolName', { poolName: '' }, 'spec.poolName: must name a VirtualMachinePool'],
    [
      'a holder over 253 characters',
      { poolName: 'runners', holder: 'h'.repeat(254) },
      'spec.holder: must be at most 253 characters',
    ],
    [
      'a ttl that is no Go duration',
      { poolName: 'runners', ttl: '1 hour' },
      'spec.ttl: must be a Go duration such as 30m or 2h',
    ],
    [
      'a ttl of zero',
      { poolName: 'runners', ttl: '0s' },
      'spec.ttl: must be a positive Go duration such as 30m or 2h',
    ],
    [
      'an onRelease other than Delete or Recycle',
      { poolName: 'runners', onRelease: 'Keep' },
      'spec.onRelease: must be Delete or Recycle',
    ],
  ])('refuses %s with one message naming the field', (_, spec, message) => {
    const v = admitClaim(review('CREATE', claim(spec)));
    expect(v).toEqual({ allowed: false, code: 422, message });
  });

  it('admits a full claim, and one with the pool alone', () => {
    const full = { poolName: 'runners', holder: 'job 123', ttl: '1h30m', onRelease: 'Recycle' };
    expect(admitClaim(review('CREATE', claim(full)))).toEqual({ allowed: true });
    expect(admitClaim(review('CREATE', claim({ poolName: 'runners' })))).toEqual({ allowed: true });
  });

  it('refuses a changed poolName on update, and admits other spec changes', () => {
    const before = claim({ poolName: 'runners', holder: 'a' });
    const moved = review('UPDATE', claim({ poolName: 'desktops', holder: 'a' }), before);
    expect(messageOf(admitClaim(moved))).toBe(claimCelMessages.poolNameImmutable);
    const held = review('UPDATE', claim({ poolName: 'runners', holder: 'b' }), before);
    expect(admitClaim(held)).toEqual({ allowed: true });
  });

  it('admits an update that leaves the spec as it was, even one it would refuse today', () => {
    // The garbage collector rewrites ownerReferences: it must never depend on the spec.
    const old = claim({ poolName: 'runners', ttl: '0s' });
    const relabelled = { ...old, metadata: { ...old.metadata, labels: { team: 'a' } } };
    expect(admitClaim(review('UPDATE', relabelled, old))).toEqual({ allowed: true });
  });

  it('leaves deletes and the status subresource alone', () => {
    expect(admitClaim(review('DELETE', undefined))).toEqual({ allowed: true });
    const status = { ...review('UPDATE', claim({}), claim({})), subResource: 'status' };
    expect(admitClaim(status)).toEqual({ allowed: true });
  });

  it('is what admitRequest answers for claims', () => {
    const step: AdmissionStep = admitRequest(review('CREATE', claim({ poolName: 'r', ttl: 'x' })));
    expect(step).toEqual({
      kind: 'verdict',
      verdict: {
        allowed: false,
        code: 422,
        message: 'spec.ttl: must be a Go duration such as 30m or 2h',
      },
    });
  });
});

describe("a pool's spec.claims", () => {
  const withClaims = (claims: Record<string, unknown>) => {
    const p = pool();
    return { ...p, spec: { ...p.spec, claims } };
  };
  const poolReview = (object: unknown): AdmissionRequest => ({
    uid: 'u2',
    kind: { group: 'virtualization.deckhouse.io', version: 'v1alpha2', kind: 'VirtualMachinePool' },
    resource: {
      group: 'virtualization.deckhouse.io',
      version: 'v1alpha2',
      resource: 'virtualmachinepools',
    },
    namespace: 'ci',
    operation: 'CREATE',
    object,
  });
  const refusal = (claims: Record<string, unknown>): string | undefined => {
    const step = admitRequest(poolReview(withClaims(claims)));
    return step.kind === 'verdict' && !step.verdict.allowed ? step.verdict.message : undefined;
  };

  it.each<[string, Record<string, unknown>, string]>([
    [
      'no maxReplicas',
      { minIdle: 2 },
      'spec.claims.maxReplicas: is required: the most replicas claims may grow the pool to',
    ],
    [
      'an onRelease other than Delete or Recycle',
      { maxReplicas: 5, onRelease: 'Keep' },
      'spec.claims.onRelease: must be Delete or Recycle',
    ],
    [
      'a maxTTL that is no Go duration',
      { maxReplicas: 5, maxTTL: 'forever' },
      'spec.claims.maxTTL: must be a Go duration such as 30m or 2h',
    ],
    [
      'a maxTTL of zero',
      { maxReplicas: 5, maxTTL: '0h' },
      'spec.claims.maxTTL: must be a positive Go duration such as 30m or 2h',
    ],
  ])('refuses %s with the field and one message', (_, claims, message) => {
    expect(refusal(claims)).toMatch(new RegExp(`(^|: )${message.replace(/[.*+?()]/g, '\\$&')}$`));
  });

  it('passes valid claims on to the dry run of the template', () => {
    const step = admitRequest(poolReview(withClaims({ minIdle: 2, maxReplicas: 8, maxTTL: '8h' })));
    expect(step.kind).toBe('dryRunVm');
  });

  it('validateClaims has nothing to say of a pool without claims or with a positive maxTTL', () => {
    expect(validateClaims(pool())).toEqual([]);
    expect(
      validateClaims(
        withClaims({ minIdle: 0, maxReplicas: 1, onRelease: 'Delete', maxTTL: '1m' }) as never,
      ),
    ).toEqual([]);
  });
});
