/**
 * The VirtualMachine a pool's template produces: the one builder behind admission's dry-run and the
 * members a reconcile creates.
 * @module
 */
import type { BlockDeviceRef, VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { API_VERSION, keys } from '../../api/index.js';
import { cloneJson } from '../formats/index.js';
import { nameOf } from './membership.js';

/** How the VM is named: exactly, or by the API server from a prefix. */
export type VmNaming = { readonly name: string } | { readonly generateName: string };

/** The template's VM, as the VM API receives it: its labels, annotations and spec, nothing more. */
export function vmFromTemplate(pool: VirtualMachinePool, naming: VmNaming): VirtualMachine {
  const t = pool.spec.virtualMachineTemplate;
  return {
    apiVersion: API_VERSION,
    kind: 'VirtualMachine',
    metadata: {
      ...naming,
      namespace: pool.metadata.namespace,
      ...(t.metadata?.labels ? { labels: { ...t.metadata.labels } } : {}),
      ...(t.metadata?.annotations ? { annotations: { ...t.metadata.annotations } } : {}),
    },
    spec: cloneJson(t.spec ?? {}),
  };
}

/** A fresh member of the pool with its disks already resolved, on revision `hash`. */
export function newMember(
  pool: VirtualMachinePool,
  name: string,
  hash: string,
  refs: BlockDeviceRef[],
): VirtualMachine {
  const vm = vmFromTemplate(pool, { name });
  return {
    ...vm,
    metadata: {
      ...vm.metadata,
      labels: {
        ...vm.metadata.labels,
        [keys.poolUid]: pool.metadata.uid ?? '',
        [keys.pool]: nameOf(pool),
        [keys.templateHash]: hash,
      },
      // Recording the patched revision at birth spares every new member a redundant rewrite.
      annotations: {
        ...vm.metadata.annotations,
        [keys.patchedTemplateHash]: hash,
        [keys.createdGeneration]: String(pool.metadata.generation ?? 0),
      },
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: 'VirtualMachinePool',
          name: nameOf(pool),
          uid: pool.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { ...vm.spec, blockDeviceRefs: refs },
  };
}
