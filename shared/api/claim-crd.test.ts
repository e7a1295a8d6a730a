import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { claimCrd } from './claim-crd.js';
import { PoolClaims, VirtualMachineClaim } from './claim.js';

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

  it('requires poolName, keeps it immutable, and describes every spec field', () => {
    expect(spec.required).toEqual(['poolName']);
    expect(spec.properties.poolName?.['x-kubernetes-validations']).toEqual([
      { rule: 'self == oldSelf', message: expect.stringContaining('immutable') as unknown },
    ]);
    for (const [field, s] of Object.entries(spec.properties))
      expect(typeof s.description, field).toBe('string');
    expect(Object.keys(spec.properties).sort()).toEqual(['holder', 'onRelease', 'poolName', 'ttl']);
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
