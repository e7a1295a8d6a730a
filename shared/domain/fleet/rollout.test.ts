import { describe, expect, it } from 'vitest';
import type { VirtualMachineTemplate } from '../../api/index.js';
import { AWAITING_RESTART, keys } from '../../api/index.js';
import { pool, runnersVmTemplate, vm } from '../../../test/unit/builders.js';
import { advance, patchToTemplate, rolloutStep } from './rollout.js';

const p = pool();
const NEW = 'new00001';
const OLD = 'old00001';

describe('rolloutStep', () => {
  it.each<[string, Parameters<typeof vm>[2], string]>([
    ['never patched', {}, 'patch'],
    ['patched to an older revision', { annotations: { [keys.patchedTemplateHash]: OLD } }, 'patch'],
    [
      'patched older even if labelled current',
      { annotations: { [keys.patchedTemplateHash]: OLD }, labels: { [keys.templateHash]: NEW } },
      'patch',
    ],
    [
      'patched and labelled current',
      { annotations: { [keys.patchedTemplateHash]: NEW }, labels: { [keys.templateHash]: NEW } },
      'none',
    ],
    [
      'patched, not awaiting restart, observed',
      { annotations: { [keys.patchedTemplateHash]: NEW }, labels: { [keys.templateHash]: OLD } },
      'advance',
    ],
    [
      'patched but awaiting restart',
      {
        annotations: { [keys.patchedTemplateHash]: NEW },
        labels: { [keys.templateHash]: OLD },
        conditions: [{ type: AWAITING_RESTART, status: 'True' }],
      },
      'none',
    ],
    [
      'patched, restart condition False',
      {
        annotations: { [keys.patchedTemplateHash]: NEW },
        labels: { [keys.templateHash]: OLD },
        conditions: [{ type: AWAITING_RESTART, status: 'False' }],
      },
      'advance',
    ],
    [
      'patched but not yet observed (observedGeneration < generation)',
      {
        annotations: { [keys.patchedTemplateHash]: NEW },
        labels: { [keys.templateHash]: OLD },
        generation: 3,
        observedGeneration: 2,
      },
      'none',
    ],
    [
      'patched and observed past generation',
      {
        annotations: { [keys.patchedTemplateHash]: NEW },
        labels: { [keys.templateHash]: OLD },
        generation: 3,
        observedGeneration: 4,
      },
      'advance',
    ],
  ])('%s → %s', (_, opts, want) => {
    expect(rolloutStep(vm(p, 'runners-bbbbb', opts), NEW)).toBe(want);
  });

  it('advances when the VM reports no observedGeneration', () => {
    const v = vm(p, 'a', {
      annotations: { [keys.patchedTemplateHash]: NEW },
      labels: { [keys.templateHash]: OLD },
    });
    delete v.status;
    expect(rolloutStep(v, NEW)).toBe('advance');
  });
});

describe('patchToTemplate', () => {
  const template: VirtualMachineTemplate = {
    metadata: {
      labels: {
        team: 'ci',
        [keys.pool]: 'evil',
        [keys.poolUid]: 'evil',
        [keys.templateHash]: 'evil',
      },
      annotations: { note: 'hello' },
    },
    spec: {
      ...runnersVmTemplate().spec,
      cpu: { cores: 4 },
      blockDeviceRefs: [{ kind: 'VirtualDisk', name: 'root' }],
    },
  };
  const member = vm(p, 'runners-bbbbb', {
    labels: { [keys.templateHash]: OLD, mine: 'x' },
    annotations: { [keys.patchedTemplateHash]: OLD, other: 'y' },
  });
  member.spec = { ...member.spec, osType: 'Windows', liveMigrationPolicy: 'Manual' };

  const patched = patchToTemplate(member, template, NEW);

  it("replaces the whole spec except the member's blockDeviceRefs", () => {
    expect(patched.spec.blockDeviceRefs).toEqual(member.spec.blockDeviceRefs);
    expect(patched.spec.cpu).toEqual({ cores: 4 });
    expect(patched.spec.osType).toBeUndefined();
    expect(patched.spec.liveMigrationPolicy).toBeUndefined();
    expect({ ...patched.spec, blockDeviceRefs: undefined }).toEqual({
      ...template.spec,
      blockDeviceRefs: undefined,
    });
  });

  it('records the patched revision and merges template annotations', () => {
    expect(patched.metadata.annotations).toEqual({
      [keys.patchedTemplateHash]: NEW,
      other: 'y',
      note: 'hello',
    });
  });

  it('merges template labels without overriding the pool labels or the effective revision', () => {
    expect(patched.metadata.labels).toEqual({
      [keys.poolUid]: 'pool-uid-1',
      [keys.pool]: 'runners',
      [keys.templateHash]: OLD,
      mine: 'x',
      team: 'ci',
    });
  });

  it('does not mutate the member or the template', () => {
    expect(member.metadata.annotations?.[keys.patchedTemplateHash]).toBe(OLD);
    expect(member.spec.cpu).toEqual({ cores: 2 });
    patched.spec.cpu = { cores: 8 };
    expect(template.spec?.cpu).toEqual({ cores: 4 });
  });

  it('leaves blockDeviceRefs absent when the member has none', () => {
    const bare = vm(p, 'x');
    delete bare.spec.blockDeviceRefs;
    expect('blockDeviceRefs' in patchToTemplate(bare, template, NEW).spec).toBe(false);
  });

  it('a patched member next advances, then is done', () => {
    const step1 = patchToTemplate(
      vm(p, 'x', { labels: { [keys.templateHash]: OLD } }),
      template,
      NEW,
    );
    expect(rolloutStep(step1, NEW)).toBe('advance');
    expect(rolloutStep(advance(step1, NEW), NEW)).toBe('none');
  });
});

describe('advance', () => {
  it('sets only the template-hash label', () => {
    const v = vm(p, 'x', { labels: { [keys.templateHash]: OLD, a: 'b' } });
    const w = advance(v, NEW);
    expect(w.metadata.labels).toEqual({ ...v.metadata.labels, [keys.templateHash]: NEW });
    expect(w.spec).toBe(v.spec);
    expect(v.metadata.labels?.[keys.templateHash]).toBe(OLD);
  });
});
