import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import type { VirtualMachinePool } from '../../api/index.js';
import { pool, vm } from '../../../test/unit/builders.js';
import { asReplica, asStandby, standbyShaped } from './roles.js';

function standbyPool(
  state: 'Stopped' | 'Running',
  templatePolicy?: 'AlwaysOn',
): VirtualMachinePool {
  const p = pool();
  p.spec.standby = { replicas: 1, state };
  const spec = { ...p.spec.virtualMachineTemplate.spec };
  if (templatePolicy === undefined) delete spec.runPolicy;
  else spec.runPolicy = templatePolicy;
  p.spec.virtualMachineTemplate = { ...p.spec.virtualMachineTemplate, spec };
  return p;
}

describe('asStandby / asReplica / standbyShaped', () => {
  it('a Stopped standby labels the member and stops it; promotion restores the template policy', () => {
    const p = standbyPool('Stopped', 'AlwaysOn');
    const s = asStandby(p, vm(p, 'runners-aaaaa'));
    expect(s.metadata.labels?.[keys.standby]).toBe('true');
    expect(s.spec.runPolicy).toBe('AlwaysOff');
    expect(standbyShaped(p, s)).toBe(true);
    const r = asReplica(p, s);
    expect(r.metadata.labels?.[keys.standby]).toBeUndefined();
    expect(r.spec.runPolicy).toBe('AlwaysOn');
  });

  it('a Running standby starts a member held stopped, as the template says', () => {
    const p = standbyPool('Running', 'AlwaysOn');
    const held = asStandby(standbyPool('Stopped', 'AlwaysOn'), vm(p, 'runners-aaaaa'));
    expect(standbyShaped(p, held)).toBe(false);
    expect(asStandby(p, held).spec.runPolicy).toBe('AlwaysOn');
  });

  it('a template without runPolicy leaves the promoted member without one', () => {
    const p = standbyPool('Stopped');
    const r = asReplica(p, asStandby(p, vm(p, 'runners-aaaaa')));
    expect(r.spec.runPolicy).toBeUndefined();
  });

  it('an unlabelled member is not standby-shaped', () => {
    const p = standbyPool('Stopped');
    expect(standbyShaped(p, vm(p, 'runners-aaaaa'))).toBe(false);
  });
});
