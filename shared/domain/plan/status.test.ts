import { describe, expect, it } from 'vitest';
import type { Condition, VirtualMachine, VirtualMachinePool } from '../../api/index.js';
import { AWAITING_RESTART, keys } from '../../api/index.js';
import { pool, vm } from '../../../test/unit/builders.js';
import { countMembers } from './status.js';

const H = 'abcd1234';
const restart: Condition[] = [{ type: AWAITING_RESTART, status: 'True' }];

function on(p: VirtualMachinePool, name: string, o: Parameters<typeof vm>[2] = {}): VirtualMachine {
  return vm(p, name, {
    ...o,
    labels: { [keys.templateHash]: H, ...o.labels },
    annotations: { [keys.patchedTemplateHash]: H, ...o.annotations },
  });
}

describe('countMembers', () => {
  it('counts Terminating members only in replicas', () => {
    const p = pool();
    const members = [
      on(p, 'a'),
      on(p, 'b', { terminating: true }),
      on(p, 'c', { phase: 'Stopped' }),
      vm(p, 'd', { labels: { [keys.templateHash]: 'old' } }),
      on(p, 'e', { conditions: restart }),
      vm(p, 'f', { annotations: { [keys.patchedTemplateHash]: H }, conditions: restart }),
    ];
    expect(countMembers(members, H)).toEqual({
      replicas: 6,
      ready: 4,
      available: 4,
      updated: 3,
      restartPending: 2,
      live: 5,
    });
  });
});
