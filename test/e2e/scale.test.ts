import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/meta.js';
import { cluster, create, dropNamespace, newNamespace, read, res } from './harness.js';
import { runnersPool } from '../../local/guide.js';

let ns = '';
beforeAll(async () => {
  ns = await newNamespace('scale');
});
afterAll(async () => {
  await dropNamespace(ns);
});

interface Scale {
  spec: { replicas?: number };
  status: { replicas?: number; selector?: string };
}

describe('scale subresource of VirtualMachinePool', () => {
  it('kubectl scale sets spec.replicas; /scale reports status.selector once the status has it', async () => {
    const { kubectl, custom } = cluster();
    const pool = await create('virtualmachinepools', ns, runnersPool(ns, 'scaled'));
    await kubectl(['scale', '-n', ns, 'virtualmachinepool/scaled', '--replicas=7']);
    const after = await read('virtualmachinepools', ns, 'scaled');
    expect((after?.spec as { replicas: number }).replicas).toBe(7);

    const path = `/apis/virtualization.deckhouse.io/v1alpha2/namespaces/${ns}/virtualmachinepools/scaled/scale`;
    const before = JSON.parse(await kubectl(['get', '--raw', path])) as Scale;
    expect(before.spec.replicas).toBe(7);
    expect(before.status.selector ?? '').toBe('');

    const selector = `${keys.poolUid}=${String(pool.metadata.uid)}`;
    await custom.replaceNamespacedCustomObjectStatus({
      ...res('virtualmachinepools', ns),
      name: 'scaled',
      body: { ...after, status: { replicas: 2, selector } },
    });
    const scale = JSON.parse(await kubectl(['get', '--raw', path])) as Scale;
    expect(scale.status).toEqual({ replicas: 2, selector });
  });
});
