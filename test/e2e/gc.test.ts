import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION } from '../../shared/api/meta.js';
import {
  cluster,
  create,
  dropNamespace,
  eventually,
  newNamespace,
  read,
  type Obj,
} from './harness.js';
import { runnersPool, runnersVm } from '../../local/guide.js';

let ns = '';
beforeAll(async () => {
  ns = await newNamespace('gc');
});
afterAll(async () => {
  await dropNamespace(ns);
});

function ownedBy(owner: Obj, kind: string) {
  return {
    apiVersion: API_VERSION,
    kind,
    name: String(owner.metadata.name),
    uid: String(owner.metadata.uid),
    controller: true,
    blockOwnerDeletion: true,
  };
}

describe('garbage collector', () => {
  it('deleting a pool removes its VM and, through the VM, its VirtualDisk', async () => {
    const pool = await create('virtualmachinepools', ns, runnersPool(ns, 'owner'));
    const vmBody = runnersVm(ns, 'owner-abc123');
    const vm = await create('virtualmachines', ns, {
      ...vmBody,
      metadata: { ...vmBody.metadata, ownerReferences: [ownedBy(pool, 'VirtualMachinePool')] },
    });
    await create('virtualdisks', ns, {
      kind: 'VirtualDisk',
      metadata: {
        name: 'owner-abc123-root',
        namespace: ns,
        ownerReferences: [ownedBy(vm, 'VirtualMachine')],
      },
      spec: { persistentVolumeClaim: { size: '1Gi' } },
    });

    await cluster().kubectl(['delete', '-n', ns, 'virtualmachinepool/owner', '--wait=false']);
    await eventually('the VM to be collected', async () =>
      (await read('virtualmachines', ns, 'owner-abc123')) ? undefined : true,
    );
    await eventually('the VirtualDisk to be collected', async () =>
      (await read('virtualdisks', ns, 'owner-abc123-root')) ? undefined : true,
    );
    expect(await read('virtualmachinepools', ns, 'owner')).toBeUndefined();
  });
});
