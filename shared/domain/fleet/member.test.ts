import { describe, expect, it } from 'vitest';
import { keys } from '../../api/index.js';
import { newMember, vmFromTemplate } from './member.js';
import { pool, runnersVmTemplate } from '../../../test/unit/builders.js';

describe('vmFromTemplate / newMember', () => {
  const p = pool({
    generation: 4,
    virtualMachineTemplate: {
      metadata: { labels: { team: 'ci' }, annotations: { note: 'x' } },
      ...runnersVmTemplate(),
    },
  });

  it('builds the template VM for admission: template metadata and spec, a generated name', () => {
    const v = vmFromTemplate(p, { generateName: 'runners-' });
    expect(v.metadata).toEqual({
      generateName: 'runners-',
      namespace: 'ci',
      labels: { team: 'ci' },
      annotations: { note: 'x' },
    });
    expect(v.spec).toEqual(runnersVmTemplate().spec);
  });

  it('builds a member on the same base with the pool labels, revision, generation and owner', () => {
    const refs = [{ kind: 'VirtualDisk' as const, name: 'runners-aaaaa-root' }];
    const v = newMember(p, 'runners-aaaaa', 'h1', refs);
    expect(v.metadata.labels).toEqual({
      team: 'ci',
      [keys.poolUid]: 'pool-uid-1',
      [keys.pool]: 'runners',
      [keys.templateHash]: 'h1',
    });
    expect(v.metadata.annotations).toEqual({
      note: 'x',
      [keys.patchedTemplateHash]: 'h1',
      [keys.createdGeneration]: '4',
    });
    expect(v.metadata.ownerReferences?.[0]).toMatchObject({ uid: 'pool-uid-1', controller: true });
    expect(v.spec.blockDeviceRefs).toEqual(refs);
    expect(v.spec.cpu).toEqual(runnersVmTemplate().spec?.cpu);
  });
});
