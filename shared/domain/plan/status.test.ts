import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import {
  pool,
  vm,
  REVISION as H,
  AWAITING_RESTART_TRUE as restart,
  onRevision as on,
} from '../../../test/unit/builders.js';
import { countMembers } from './status.js';

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
