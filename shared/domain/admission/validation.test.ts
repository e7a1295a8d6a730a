import { describe, expect, it } from 'vitest';
import type { DiskTemplate, VirtualMachinePool } from '../../api/index.js';
import { celMessages } from '../../api/index.js';
import { pool, runnersVmTemplate } from '../../../test/unit/builders.js';
import { nameTooLong, validatePool } from './validation.js';

const REFS = 'spec.virtualMachineTemplate.spec.blockDeviceRefs';

function messages(p: VirtualMachinePool): string[] {
  return validatePool(p).map((v) => v.message);
}

function withRefs(
  refs: {
    kind: 'VirtualDisk' | 'ClusterVirtualImage' | 'VirtualImage';
    name: string;
    bootOrder?: number;
  }[],
  templates?: DiskTemplate[],
): VirtualMachinePool {
  const t = runnersVmTemplate();
  return pool({
    virtualMachineTemplate: { ...t, spec: { ...t.spec, blockDeviceRefs: refs } },
    ...(templates === undefined ? {} : { virtualDiskTemplates: templates }),
  });
}

function tmpl(name: string, extra: Partial<DiskTemplate> = {}): DiskTemplate {
  return { name, spec: { persistentVolumeClaim: { size: '10Gi' } }, ...extra };
}

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

  it.each([
    ['30m', true],
    ['1h', true],
    ['1h30m', true],
    ['1.5h', true],
    ['0', true],
    ['1d', false],
    ['abc', false],
    ['-5m', false],
    ['', false],
  ])('ttl %j valid: %s', (ttl, ok) => {
    const p = withRefs(
      [{ kind: 'VirtualDisk', name: 'cache' }],
      [tmpl('cache', { reclaim: { onScaleDown: 'Retain', keep: 1, ttl } })],
    );
    expect(validatePool(p)).toEqual(
      ok
        ? []
        : [
            {
              field: 'spec.virtualDiskTemplates[0].reclaim.ttl',
              message: `reclaim.ttl "${ttl}" of virtualDiskTemplates "cache" is not a valid duration: use a Go duration such as 30m, 1h or 1h30m`,
            },
          ],
    );
  });

  it.each<[string, DiskTemplate['spec'], string | undefined]>([
    ['size 10Gi', { persistentVolumeClaim: { size: '10Gi' } }, undefined],
    ['size as bytes', { persistentVolumeClaim: { size: 1024 } }, undefined],
    [
      'size 0',
      { persistentVolumeClaim: { size: '0' } },
      'the size of virtualDiskTemplates "d" must be a positive quantity, got "0"',
    ],
    [
      'size 0 as number',
      { persistentVolumeClaim: { size: 0 } },
      'the size of virtualDiskTemplates "d" must be a positive quantity, got "0"',
    ],
    [
      'negative size',
      { persistentVolumeClaim: { size: '-1Gi' } },
      'the size of virtualDiskTemplates "d" must be a positive quantity, got "-1Gi"',
    ],
    [
      'malformed size',
      { persistentVolumeClaim: { size: 'lots' } },
      'the size of virtualDiskTemplates "d" must be a positive quantity, got "lots"',
    ],
    ['dataSource without size', { dataSource: { type: 'ObjectRef' } }, undefined],
    [
      'neither size nor dataSource',
      { persistentVolumeClaim: { storageClassName: 'fast' } },
      "if the data source is not specified, it's necessary to set spec.PersistentVolumeClaim.size to create blank virtual disk",
    ],
    [
      'empty spec',
      {},
      "if the data source is not specified, it's necessary to set spec.PersistentVolumeClaim.size to create blank virtual disk",
    ],
  ])('disk spec: %s', (_, spec, want) => {
    const p = withRefs([{ kind: 'VirtualDisk', name: 'd' }], [{ name: 'd', spec }]);
    expect(messages(p)).toEqual(want === undefined ? [] : [want]);
  });

  it('reports every violation in order: name, references, templates', () => {
    const p = withRefs(
      [{ kind: 'VirtualDisk', name: 'x' }],
      [{ name: 'd', reclaim: { onScaleDown: 'Delete', keep: 1 }, spec: {} }],
    );
    p.metadata.name = 'n'.repeat(58);
    expect(validatePool(p).map((v) => v.field)).toEqual([
      'metadata.name',
      REFS,
      REFS,
      'spec.virtualDiskTemplates[0].reclaim',
      'spec.virtualDiskTemplates[0].reclaim',
      'spec.virtualDiskTemplates[0].spec',
    ]);
  });

  it.each<[string, boolean]>([
    ['10m', true],
    ['30s', true],
    ['0', true],
    ['1h30m', true],
    ['ten minutes', false],
    ['-1m', false],
    ['', false],
  ])('scaleDown.drainTimeout %j valid: %s', (drainTimeout, ok) => {
    const p = pool();
    p.spec.scaleDown = { drainTimeout };
    expect(validatePool(p)).toEqual(
      ok
        ? []
        : [
            {
              field: 'spec.scaleDown.drainTimeout',
              message: `scaleDown.drainTimeout "${drainTimeout}" is not a valid duration: use a Go duration such as 30s, 10m or 1h`,
            },
          ],
    );
  });

  it.each<[string, (p: VirtualMachinePool) => void, string[]]>([
    ['a budget of 2', (p) => (p.spec.rollout = { maxUnavailable: 2 }), []],
    ['a budget of 25%', (p) => (p.spec.rollout = { maxUnavailable: '25%' }), []],
    [
      'a budget of 0',
      (p) => (p.spec.rollout = { maxUnavailable: 0 }),
      ['spec.rollout.maxUnavailable'],
    ],
    [
      'a budget of 0%',
      (p) => (p.spec.rollout = { maxUnavailable: '0%' }),
      ['spec.rollout.maxUnavailable'],
    ],
    [
      'a budget of 150%',
      (p) => (p.spec.rollout = { maxUnavailable: '150%' }),
      ['spec.rollout.maxUnavailable'],
    ],
    ['startupTimeout 5m', (p) => (p.spec.healing = { startupTimeout: '5m' }), []],
    [
      'startupTimeout 0',
      (p) => (p.spec.healing = { startupTimeout: '0' }),
      ['spec.healing.startupTimeout'],
    ],
    ['maxUnhealthy 3', (p) => (p.spec.healing = { startupTimeout: '5m', maxUnhealthy: 3 }), []],
    [
      'maxUnhealthy 40%',
      (p) => (p.spec.healing = { startupTimeout: '5m', maxUnhealthy: '40%' }),
      [],
    ],
    [
      'maxUnhealthy 0',
      (p) => (p.spec.healing = { startupTimeout: '5m', maxUnhealthy: 0 }),
      ['spec.healing.maxUnhealthy'],
    ],
    [
      'maxUnhealthy half',
      (p) => (p.spec.healing = { startupTimeout: '5m', maxUnhealthy: 'half' }),
      ['spec.healing.maxUnhealthy'],
    ],
    [
      'maxUnhealthy 101%',
      (p) => (p.spec.healing = { startupTimeout: '5m', maxUnhealthy: '101%' }),
      ['spec.healing.maxUnhealthy'],
    ],
    ['maxMemberAge 24h', (p) => (p.spec.maxMemberAge = '24h'), []],
    ['maxMemberAge a day', (p) => (p.spec.maxMemberAge = 'a day'), ['spec.maxMemberAge']],
  ])('%s', (_, set, fields) => {
    const p = pool();
    set(p);
    expect(validatePool(p).map((v) => v.field)).toEqual(fields);
  });

  it('names the breaker rule in its refusal', () => {
    const p = pool();
    p.spec.healing = { startupTimeout: '5m', maxUnhealthy: '0%' };
    expect(validatePool(p)).toEqual([
      {
        field: 'spec.healing.maxUnhealthy',
        message:
          'healing.maxUnhealthy must be an integer of at least 1 or a percentage from 1% to 100%',
      },
    ]);
  });
});
