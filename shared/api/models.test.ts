import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ObjectMeta } from './meta.js';
import { VirtualDisk } from './disk.js';
import { VirtualMachine } from './vm.js';
import { VirtualMachinePool } from './pool.js';
import { pool } from '../../test/unit/builders.js';

type Json = Record<string, unknown>;

/** The v1alpha2 spec schema of a platform CRD the project ships for its local control plane. */
function servedSpec(file: string): Json {
  const url = new URL(`../../local/crds/${file}`, import.meta.url);
  const crd = parse(readFileSync(fileURLToPath(url), 'utf8')) as {
    spec: { versions: { name: string; schema: { openAPIV3Schema: Json } }[] };
  };
  const v = crd.spec.versions.find((x) => x.name === 'v1alpha2');
  return (v?.schema.openAPIV3Schema.properties as { spec: Json }).spec;
}

const at = (node: Json, ...path: string[]): Json =>
  path.reduce<Json>((n, k) => (n[k] ?? {}) as Json, node);

/** A VM with one block device whose bootOrder is `order` (raw JSON, as the API server sends it). */
const vmWithBootOrder = (order: string): unknown =>
  JSON.parse(
    `{"metadata":{"name":"v","generation":1},"spec":{"blockDeviceRefs":[{"kind":"VirtualDisk","name":"d","bootOrder":${order}}]}}`,
  );

describe('models accept what the served schemas store', () => {
  it('bootOrder: the VM CRD says only integer, minimum 1 (int64), so no int32 bound', () => {
    const schema = at(servedSpec('virtualmachines.yaml'), 'properties', 'blockDeviceRefs', 'items');
    expect(at(schema, 'properties', 'bootOrder')).toEqual({ type: 'integer', minimum: 1 });
    for (const order of ['1', String(2 ** 31), String(2 ** 40), '9223372036854775807'])
      expect(VirtualMachine.safeParse(vmWithBootOrder(order)).success).toBe(true);
    // What the schema refuses, the model refuses too.
    for (const order of ['0', '-3', '1.5', '"1"'])
      expect(VirtualMachine.safeParse(vmWithBootOrder(order)).success).toBe(false);
  });

  it('disk size: int-or-string, any integer', () => {
    const size = at(
      servedSpec('virtualdisks.yaml'),
      'properties',
      'persistentVolumeClaim',
      'properties',
      'size',
    );
    expect(size['x-kubernetes-int-or-string']).toBe(true);
    const disk = JSON.parse(
      '{"metadata":{"name":"d"},"spec":{"persistentVolumeClaim":{"size":18446744073709551616}}}',
    ) as unknown;
    expect(VirtualDisk.safeParse(disk).success).toBe(true);
  });

  it('metadata.generation and observedGeneration: int64, beyond the safe integers', () => {
    const meta = JSON.parse('{"name":"v","generation":9007199254740993}') as unknown;
    expect(ObjectMeta.safeParse(meta).success).toBe(true);
    expect(ObjectMeta.safeParse({ name: 'v', generation: 1.5 }).success).toBe(false);
  });
});

describe('healing.maxUnhealthy', () => {
  it('takes any integer the CRD stores (no int32 bound): a pool with a huge one is still readable', () => {
    const p = pool();
    p.spec.healing = { startupTimeout: '5m', maxUnhealthy: 2 ** 40 };
    expect(VirtualMachinePool.safeParse(JSON.parse(JSON.stringify(p))).success).toBe(true);
  });
});
