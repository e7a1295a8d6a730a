/**
 * In-place template rollout: patch each member's spec to the template (keeping its disks), then mark it
 * updated once the platform no longer waits for a restart.
 * @module
 */
import type { VirtualMachine, VirtualMachineTemplate } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { cloneJson } from '../formats/index.js';
import { awaitingRestart } from './lifecycle.js';

/** What rollout does to one member in this pass. */
export type RolloutStep = 'patch' | 'advance' | 'none';

/**
 * Step 1 (patch) when the member's spec was last patched to another revision; step 2 (advance the
 * `template-hash` label) once patched, not awaiting a restart, and observed by the VM controller —
 * without that last check a member could be marked updated before its restart need is known.
 */
export function rolloutStep(vm: VirtualMachine, hash: string): RolloutStep {
  const patched = vm.metadata.annotations?.[keys.patchedTemplateHash];
  if (patched !== hash) return 'patch';
  if (vm.metadata.labels?.[keys.templateHash] === hash) return 'none';
  if (awaitingRestart(vm)) return 'none';
  const observed = vm.status?.observedGeneration;
  const generation = vm.metadata.generation;
  if (observed !== undefined && generation !== undefined && observed < generation) return 'none';
  return 'advance';
}

/**
 * The member with the template applied: the whole spec replaced except `blockDeviceRefs`, template
 * labels and annotations merged in (so a metadata-only change reaches live members), and the
 * revision it was patched to recorded.
 */
export function patchToTemplate(
  vm: VirtualMachine,
  template: VirtualMachineTemplate,
  hash: string,
): VirtualMachine {
  const spec = cloneJson(template.spec ?? {});
  if (vm.spec.blockDeviceRefs !== undefined) spec.blockDeviceRefs = vm.spec.blockDeviceRefs;
  else delete spec.blockDeviceRefs;
  return {
    ...vm,
    metadata: {
      ...vm.metadata,
      labels: { ...vm.metadata.labels, ...template.metadata?.labels, ...reserved(vm) },
      annotations: {
        ...vm.metadata.annotations,
        ...template.metadata?.annotations,
        [keys.patchedTemplateHash]: hash,
      },
    },
    spec,
  };
}

/** The pool's own labels on a member, which template labels may not override. */
function reserved(vm: VirtualMachine): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of [keys.poolUid, keys.pool, keys.templateHash, keys.standby]) {
    const v = vm.metadata.labels?.[key];
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** The member marked as effectively on revision `hash`. */
export function advance(vm: VirtualMachine, hash: string): VirtualMachine {
  return {
    ...vm,
    metadata: { ...vm.metadata, labels: { ...vm.metadata.labels, [keys.templateHash]: hash } },
  };
}
