import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { poolCrd } from './crd.js';
import { celMessages } from './pool.js';
import { claimCelMessages } from './claim.js';

type Json = Record<string, unknown>;
const crd = poolCrd() as {
  spec: { names: Json; versions: Array<Json & { schema: { openAPIV3Schema: Json } }> };
};
const version = crd.spec.versions[0]!;
const schema = version.schema.openAPIV3Schema as { properties: Record<string, Json> };

function walk(node: unknown, visit: (n: Json) => void): void {
  if (typeof node !== 'object' || node === null) return;
  if (Array.isArray(node)) {
    for (const x of node) walk(x, visit);
    return;
  }
  visit(node as Json);
  for (const v of Object.values(node)) walk(v, visit);
}

describe('the VirtualMachinePool CRD generated from the models', () => {
  it('is the file knative/ ships (run `npm run crd` after changing shared/api)', () => {
    const file = fileURLToPath(new URL('../../knative/crd/crd.yaml', import.meta.url));
    expect(parse(readFileSync(file, 'utf8'))).toEqual(poolCrd());
  });

  it('has the reference names, category and subresources', () => {
    expect(crd.spec.names).toMatchObject({
      kind: 'VirtualMachinePool',
      plural: 'virtualmachinepools',
      shortNames: ['vmpool', 'vmpools'],
      categories: ['virtualization'],
    });
    expect(version.subresources).toEqual({
      status: {},
      scale: {
        specReplicasPath: '.spec.replicas',
        statusReplicasPath: '.status.replicas',
        labelSelectorPath: '.status.selector',
      },
    });
  });

  it('prints Replicas, Ready, Age, and Updated, Available, Standby, Draining, Protected, Held, Claimed, Idle and Policy at priority 1 (-o wide)', () => {
    const cols = version.additionalPrinterColumns as Array<{
      name: string;
      priority?: number;
      jsonPath: string;
    }>;
    expect(cols.map((c) => [c.name, c.priority ?? 0])).toEqual([
      ['Replicas', 0],
      ['Ready', 0],
      ['Updated', 1],
      ['Available', 1],
      ['Standby', 1],
      ['Ready-Standby', 1],
      ['Unhealthy', 1],
      ['Draining', 1],
      ['Protected', 1],
      ['Held', 1],
      ['Claimed', 1],
      ['Idle', 1],
      ['Policy', 1],
      ['Age', 0],
    ]);
    expect(cols.find((c) => c.name === 'Draining')?.jsonPath).toBe('.status.drainingReplicas');
    expect(cols.find((c) => c.name === 'Protected')?.jsonPath).toBe('.status.protectedReplicas');
    expect(cols.find((c) => c.name === 'Held')?.jsonPath).toBe('.status.heldReplicas');
  });

  it('describes the fleet-control fields', () => {
    type Described = { description?: string; properties?: Record<string, Described> };
    const props = schema.properties as Record<string, Described>;
    const drain = props.spec?.properties?.scaleDown?.properties?.drainTimeout;
    expect(drain?.description).toContain('vmpool.virtualization.deckhouse.io/drained');
    const status = props.status?.properties ?? {};
    expect(status.protectedReplicas?.description).toContain(
      'vmpool.virtualization.deckhouse.io/protected',
    );
    expect(status.drainingReplicas?.description).toContain('draining');
  });

  it('carries every CEL rule of the reference with its exact message', () => {
    const messages: string[] = [];
    walk(schema, (n) => {
      const rules = n['x-kubernetes-validations'] as Array<{ message: string }> | undefined;
      for (const r of rules ?? []) messages.push(r.message);
    });
    expect(messages.sort()).toEqual(
      [...Object.values(celMessages), claimCelMessages.minIdleWithinMax].sort(),
    );
  });

  it('is structural: no additionalProperties false or empty, no $ref, typed nodes', () => {
    walk(schema, (n) => {
      expect(n.additionalProperties).not.toBe(false);
      if (typeof n.additionalProperties === 'object')
        expect(Object.keys(n.additionalProperties as Json).length).toBeGreaterThan(0);
      expect(n.$ref).toBeUndefined();
    });
  });

  it('keeps unknown template fields but not unknown pool spec fields', () => {
    const spec = schema.properties.spec as Json & { properties: Record<string, Json> };
    expect(spec['x-kubernetes-preserve-unknown-fields']).toBeUndefined();
    const tmpl = spec.properties.virtualMachineTemplate as { properties: Record<string, Json> };
    expect(tmpl.properties.spec?.['x-kubernetes-preserve-unknown-fields']).toBe(true);
  });

  it('does not require liveMigrationPolicy (the reference trap): the template spec requires nothing', () => {
    const spec = schema.properties.spec as { properties: Record<string, Json>; required: string[] };
    expect(spec.required.sort()).toEqual([
      'scaleDownPolicy',
      'virtualDiskTemplates',
      'virtualMachineTemplate',
    ]);
    const tmpl = spec.properties.virtualMachineTemplate as { properties: Record<string, Json> };
    expect(tmpl.properties.spec?.required).toBeUndefined();
  });

  it('explains every field: each property has a description (kubectl explain shows it)', () => {
    const bare: string[] = [];
    const visit = (node: Json, path: string): void => {
      const props = (node.properties ?? {}) as Record<string, Json>;
      for (const [name, prop] of Object.entries(props)) {
        // The root's metadata may carry nothing but its type (the API server owns that schema).
        if (path === '' && name === 'metadata') continue;
        if (typeof prop.description !== 'string' || prop.description.length < 10)
          bare.push(`${path}.${name}`);
        visit(prop, `${path}.${name}`);
      }
      if (typeof node.items === 'object' && node.items !== null)
        visit(node.items as Json, `${path}[]`);
    };
    visit(schema, '');
    expect(bare).toEqual([]);
    const spec = schema.properties.spec as {
      properties: Record<string, Json>;
    };
    expect(String(spec.properties.replicas?.description)).toContain('kubectl scale');
  });
});
