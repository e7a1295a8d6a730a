import { describe, expect, it } from 'vitest';
import type { DiskTemplate, VirtualMachinePool } from '../../api/index.js';
import {
  pool,
  validationMessages as messages,
  withRefs,
  diskTemplate as tmpl,
} from '../../../test/unit/builders.js';
import { validatePool } from './validation.js';

const REFS = 'spec.virtualMachineTemplate.spec.blockDeviceRefs';

describe('validatePool', () => {
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
