/**
 * A member's role as its object shows it: a standby member carries the standby label and, while the
 * standby is Stopped, runPolicy AlwaysOff; a replica carries neither (its runPolicy is the template's
 * or one a user set, which vmpool leaves alone).
 * @module
 */
import type { VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { isStandby } from './lifecycle.js';

/** What the standby's state asks of a member's run policy: nothing, stop it, or the template's. */
function standbyPolicy(pool: VirtualMachinePool, vm: VirtualMachine): 'keep' | 'stop' | 'template' {
  if (pool.spec.standby?.state !== 'Running')
    return vm.spec.runPolicy === 'AlwaysOff' ? 'keep' : 'stop';
  // Switched from Stopped to Running: start what was held stopped for the standby.
  const template = pool.spec.virtualMachineTemplate.spec?.runPolicy;
  return vm.spec.runPolicy === 'AlwaysOff' && template !== 'AlwaysOff' ? 'template' : 'keep';
}

/** The member with the template's run policy (the field dropped when the template has none). */
function withTemplatePolicy(pool: VirtualMachinePool, vm: VirtualMachine): VirtualMachine {
  const spec = { ...vm.spec };
  const policy = pool.spec.virtualMachineTemplate.spec?.runPolicy;
  if (policy === undefined) delete spec.runPolicy;
  else spec.runPolicy = policy;
  return { ...vm, spec };
}

/** The member as a standby member: labelled, run policy as the standby's state asks. */
export function asStandby(pool: VirtualMachinePool, vm: VirtualMachine): VirtualMachine {
  const labels = { ...vm.metadata.labels, [keys.standby]: 'true' };
  const out = { ...vm, metadata: { ...vm.metadata, labels } };
  switch (standbyPolicy(pool, vm)) {
    case 'keep':
      return out;
    case 'stop':
      return { ...out, spec: { ...out.spec, runPolicy: 'AlwaysOff' } };
    case 'template':
      return withTemplatePolicy(pool, out);
  }
}

/** The member promoted to a replica: standby label removed, the template's run policy restored. */
export function asReplica(pool: VirtualMachinePool, vm: VirtualMachine): VirtualMachine {
  const labels = { ...vm.metadata.labels };
  delete labels[keys.standby];
  return withTemplatePolicy(pool, { ...vm, metadata: { ...vm.metadata, labels } });
}

/** True when a member already looks as a standby member should. */
export function standbyShaped(pool: VirtualMachinePool, vm: VirtualMachine): boolean {
  return isStandby(vm) && standbyPolicy(pool, vm) === 'keep';
}
