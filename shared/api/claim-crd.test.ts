import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { claimCrd } from './claim-crd.js';
import { PoolClaims, VirtualMachineClaim, claimCelMessages } from './claim.js';
import { poolCrd } from './crd.js';

type Json = Record<string, unknown>;
const crd = claimCrd() as {
  spec: {
    group: string;
    names: Json;
    versions: Array<Json & { schema: { openAPIV3Schema: Json } }>;
  };
};
const version = crd.spec.versions[0]!;
const spec = (version.schema.openAPIV3Schema as { properties: Record<string, Json> }).properties
  .spec as { properties: Record<string, Json>; required?: string[] };

describe('the VirtualMachineClaim CRD generated from the models', () => {
  it('is the file knative/ ships (run `npm run crd` after changing shared/api)', () => {
    const file = fileURLToPath(new URL('../../knative/crd/claim-crd.yaml', import.meta.url));
    expect(parse(readFileSync(file, 'utf8'))).toEqual(claimCrd());
  });

  it('is vmpool.virtualization.deckhouse.io/v1alpha1 with short name vmclaim and a status subresource', () => {
    expect(crd.spec.group).toBe('vmpool.virtualization.deckhouse.io');
    expect(version.name).toBe('v1alpha1');
    expect(crd.spec.names).toMatchObject({
      plural: 'virtualmachineclaims',
      shortNames: ['vmclaim', 'vmclaims'],
    });
    expect(version.subresources).toEqual({ status: {} });
    const columns = (version.additionalPrinterColumns as Json[]).map((c) => c.name);
    expect(columns).toEqual(['Pool', 'Phase', 'VM', 'Holder', 'Age']);
  });

  it('requires poolName and describes every spec field', () => {
    expect(spec.required).toEqual(['poolName']);
    for (const [field, s] of Object.entries(spec.properties))
      expect(typeof s.description, field).toBe('string');
    expect(Object.keys(spec.properties).sort()).toEqual(['holder', 'onRelease', 'poolName', 'ttl']);
  });

  it("has no CEL rule and no duration pattern: those are the webhook's, one message per mistake", () => {
    // With any CEL rule, a required, enum or length refusal gains "some validation rules were not
    // checked"; a pattern's refusal quotes the regular expression.
    expect(JSON.stringify(crd)).not.toContain('x-kubernetes-validations');
    expect(spec.properties.ttl?.pattern).toBeUndefined();
    expect(spec.properties.onRelease?.enum).toEqual(['Delete', 'Recycle']);
    expect(spec.properties.holder?.maxLength).toBe(253);
  });

  it("leaves the pool's spec.claims checks the webhook words better to it", () => {
    const pool = poolCrd() as typeof crd;
    const poolSpec = (
      pool.spec.versions[0]!.schema.openAPIV3Schema as { properties: Record<string, Json> }
    ).properties.spec as {
      properties: Record<string, Json & { properties: Record<string, Json> }>;
    };
    const claims = poolSpec.properties.claims!;
    expect(claims.required).toBeUndefined();
    expect(claims.properties.maxReplicas?.minimum).toBeUndefined();
    expect(claims.properties.onRelease?.enum).toBeUndefined();
    expect(claims.properties.maxTTL?.pattern).toBeUndefined();
    expect(claims.properties.minIdle?.minimum).toBe(0);
    expect(claims['x-kubernetes-validations']).toEqual([
      {
        rule: '!has(self.maxReplicas) || self.minIdle <= self.maxReplicas',
        message: claimCelMessages.minIdleWithinMax,
      },
    ]);
  });
});

describe('the claim models', () => {
  it('keep unknown fields and default the pool claims', () => {
    const claim = VirtualMachineClaim.parse({
      metadata: { name: 'c' },
      spec: { poolName: 'p', future: 1 },
    });
    expect(claim.spec).toEqual({ poolName: 'p', future: 1 });
    expect(PoolClaims.parse({ maxReplicas: 5 })).toEqual({
      maxReplicas: 5,
      minIdle: 0,
      onRelease: 'Delete',
    });
  });

  it('refuse a ttl that is not a Go duration and a holder over 253 characters', () => {
    expect(
      VirtualMachineClaim.safeParse({ metadata: {}, spec: { poolName: 'p', ttl: '1 hour' } })
        .success,
    ).toBe(false);
    expect(
      VirtualMachineClaim.safeParse({
        metadata: {},
        spec: { poolName: 'p', holder: 'x'.repeat(254) },
      }).success,
    ).toBe(false);
  });
});
