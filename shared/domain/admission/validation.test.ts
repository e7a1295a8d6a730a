import { describe, expect, it } from 'vitest';
import type { DiskTemplate } from '../../api/index.js';
import { celMessages } from '../../api/index.js';
import {
  pool,
  runnersVmTemplate,
  validationMessages as messages,
  withRefs,
  diskTemplate as tmpl,
} from '../../../test/unit/builders.js';
import { nameTooLong, validatePool } from './validation.js';

const REFS = 'spec.virtualMachineTemplate.spec.blockDeviceRefs';

describe('validatePool', () => {
  it('accepts the user guide runners pool', () => {
    expect(validatePool(pool())).toEqual([]);
  });

  it.each([
    [57, []],
    [58, ['too long']],
  ])('a pool name of %d characters', (len, want) => {
    const name = 'p'.repeat(len);
    const out = validatePool(pool({ name }));
    expect(out.map((v) => v.field)).toEqual(want.length === 0 ? [] : ['metadata.name']);
    if (want.length > 0) {
      expect(out[0]!.message).toBe(
        `VirtualMachinePool name "${name}" is too long: it must be at most 57 characters so that generated VirtualMachine names stay within the 63-character limit`,
      );
      expect(nameTooLong(name)).toBe(out[0]!.message);
    }
  });

  it.each([
    [
      'a template without a reference',
      withRefs([{ kind: 'VirtualDisk', name: 'root' }]),
      [celMessages.everyTemplateReferenced, celMessages.referencedOnce],
    ],
    [
      'a reference without a template',
      withRefs([
        { kind: 'VirtualDisk', name: 'root' },
        { kind: 'VirtualDisk', name: 'cache' },
        { kind: 'VirtualDisk', name: 'data' },
      ]),
      [celMessages.everyRefNamesTemplate, celMessages.referencedOnce],
    ],
    [
      'a template referenced twice',
      withRefs([
        { kind: 'VirtualDisk', name: 'root' },
        { kind: 'VirtualDisk', name: 'cache' },
        { kind: 'VirtualDisk', name: 'cache' },
      ]),
      [
        celMessages.referencedOnce,
        'cannot specify the same block device reference more than once: VirtualDisk with name "cache" has a duplicate reference',
      ],
    ],
    [
      'a duplicate image reference',
      withRefs([
        { kind: 'VirtualDisk', name: 'root' },
        { kind: 'VirtualDisk', name: 'cache' },
        { kind: 'ClusterVirtualImage', name: 'iso' },
        { kind: 'ClusterVirtualImage', name: 'iso' },
      ]),
      [
        'cannot specify the same block device reference more than once: ClusterVirtualImage with name "iso" has a duplicate reference',
      ],
    ],
    [
      'same name with different kinds (not a duplicate)',
      withRefs([
        { kind: 'VirtualDisk', name: 'root' },
        { kind: 'VirtualDisk', name: 'cache' },
        { kind: 'VirtualImage', name: 'root' },
      ]),
      [],
    ],
    [
      'a repeated bootOrder',
      withRefs([
        { kind: 'VirtualDisk', name: 'root', bootOrder: 1 },
        { kind: 'VirtualDisk', name: 'cache', bootOrder: 1 },
      ]),
      ['bootOrder 1 is used by more than one block device reference'],
    ],
    [
      'distinct bootOrders',
      withRefs([
        { kind: 'VirtualDisk', name: 'root', bootOrder: 2 },
        { kind: 'VirtualDisk', name: 'cache', bootOrder: 1 },
      ]),
      [],
    ],
    [
      'only image references',
      withRefs([{ kind: 'ClusterVirtualImage', name: 'iso' }]),
      [celMessages.everyTemplateReferenced, celMessages.referencedOnce],
    ],
  ])('bijection: %s', (_, p, want) => {
    expect(messages(p)).toEqual(want);
    for (const v of validatePool(p)) expect(v.field).toBe(REFS);
  });

  it('a template spec without blockDeviceRefs fails all three bijection rules, as CEL does', () => {
    const p = pool({ virtualMachineTemplate: { spec: { runPolicy: 'AlwaysOn' } } });
    const bijection = [
      celMessages.everyTemplateReferenced,
      celMessages.everyRefNamesTemplate,
      celMessages.referencedOnce,
    ];
    expect(validatePool(p)).toEqual(bijection.map((message) => ({ field: REFS, message })));
    expect(messages(pool({ virtualMachineTemplate: {} }))).toEqual(bijection);
  });

  it('reports Legacy even when the template has no blockDeviceRefs', () => {
    const p = pool({ virtualMachineTemplate: { spec: { osType: 'Legacy' } } });
    expect(messages(p)).toContain(celMessages.noLegacy);
  });

  it('refuses the Legacy osType with the reference message', () => {
    const t = runnersVmTemplate();
    const p = pool({ virtualMachineTemplate: { ...t, spec: { ...t.spec, osType: 'Legacy' } } });
    expect(validatePool(p)).toEqual([
      { field: 'spec.virtualMachineTemplate.spec.osType', message: celMessages.noLegacy },
    ]);
    expect(celMessages.noLegacy).toBe(
      'The Legacy osType is not supported in a VirtualMachinePool: replicas of such a pool cannot be told apart, because provisioning is unavailable for these operating systems.',
    );
  });

  it.each([
    [0, ['a pool needs between 1 and 16 virtualDiskTemplates, got 0']],
    [1, []],
    [16, []],
    [17, ['a pool needs between 1 and 16 virtualDiskTemplates, got 17']],
  ])('%d disk templates', (n, want) => {
    const templates = Array.from({ length: n }, (_, i) => tmpl(`d${i}`));
    const p = withRefs(
      templates.map((t) => ({ kind: 'VirtualDisk', name: t.name })),
      templates,
    );
    expect(messages(p)).toEqual(want);
  });

  it('refuses duplicate template names', () => {
    const p = withRefs(
      [
        { kind: 'VirtualDisk', name: 'a' },
        { kind: 'VirtualDisk', name: 'b' },
      ],
      [tmpl('a'), tmpl('b'), tmpl('a')],
    );
    expect(validatePool(p)).toContainEqual({
      field: 'spec.virtualDiskTemplates[2].name',
      message: 'duplicate virtualDiskTemplates name "a"',
    });
    expect(messages(p)).toContain(celMessages.referencedOnce);
  });

  it.each<[string, DiskTemplate['reclaim'], string[]]>([
    ['Delete default', { onScaleDown: 'Delete', keep: 0 }, []],
    [
      'Delete with keep',
      { onScaleDown: 'Delete', keep: 1 },
      [celMessages.keepTtlOnlyRetain, celMessages.keepRequiresTtl],
    ],
    [
      'Delete with ttl',
      { onScaleDown: 'Delete', keep: 0, ttl: '1h' },
      [celMessages.keepTtlOnlyRetain],
    ],
    [
      'Delete with keep and ttl',
      { onScaleDown: 'Delete', keep: 2, ttl: '1h' },
      [celMessages.keepTtlOnlyRetain],
    ],
    ['Retain plain', { onScaleDown: 'Retain', keep: 0 }, []],
    ['Retain keep without ttl', { onScaleDown: 'Retain', keep: 1 }, [celMessages.keepRequiresTtl]],
    ['Retain keep 1 ttl 1h', { onScaleDown: 'Retain', keep: 1, ttl: '1h' }, []],
    ['Retain ttl without keep', { onScaleDown: 'Retain', keep: 0, ttl: '30m' }, []],
  ])('reclaim: %s', (_, reclaim, want) => {
    const p = withRefs([{ kind: 'VirtualDisk', name: 'd' }], [tmpl('d', { reclaim })]);
    expect(messages(p)).toEqual(want);
    for (const v of validatePool(p)) expect(v.field).toBe('spec.virtualDiskTemplates[0].reclaim');
  });

  it('reclaim messages are the reference CEL texts', () => {
    expect(celMessages.keepTtlOnlyRetain).toBe(
      'keep and ttl are only valid with onScaleDown: Retain',
    );
    expect(celMessages.keepRequiresTtl).toBe(
      'keep requires ttl; without ttl free disks are never garbage-collected, so keep would have no effect',
    );
  });
});
