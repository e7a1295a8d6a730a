import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { celMessages } from '../../shared/api/pool.js';
import { cluster, create, dropNamespace, errorText, newNamespace } from './harness.js';
import { cdromPool, reclaimPool, runnersPool, runnersVm } from '../../local/guide.js';

type Pool = ReturnType<typeof runnersPool>;
type Mutable = Record<string, unknown>;

let ns = '';
beforeAll(async () => {
  ns = await newNamespace('crd');
});
afterAll(async () => {
  await dropNamespace(ns);
});

async function rejection(pool: object): Promise<string> {
  try {
    await create('virtualmachinepools', ns, pool);
  } catch (err) {
    return errorText(err);
  }
  throw new Error('the API server accepted an invalid pool');
}

/** A runners pool with `edit` applied to a deep copy. */
function variant(name: string, edit: (p: Pool) => void): Pool {
  const p = structuredClone(runnersPool(ns, name));
  edit(p);
  return p;
}

describe('pool CRD against a real kube-apiserver', () => {
  it('accepts every pool example of the user guide', async () => {
    for (const pool of [runnersPool(ns), cdromPool(ns), reclaimPool(ns)]) {
      const created = await create('virtualmachinepools', ns, pool);
      expect(created.metadata.uid).toBeTruthy();
    }
  });

  it('accepts a VirtualMachine stamped from the runners template', async () => {
    const vm = await create('virtualmachines', ns, runnersVm(ns, 'runners-1b2e84'));
    const spec = vm.spec as Mutable;
    expect(spec.runPolicy).toBe('AlwaysOn');
    // Defaults the platform's CRD applies; the pool relies on them being present on members.
    expect(spec.disruptions).toEqual({ restartApprovalMode: 'Manual' });
    expect(spec.osType).toBe('Generic');
  });

  const invalid: [string, string, (p: Pool) => void][] = [
    [
      'keep with Delete',
      celMessages.keepTtlOnlyRetain,
      (p) => {
        (p.spec.virtualDiskTemplates[0] as Mutable).reclaim = { onScaleDown: 'Delete', keep: 1 };
      },
    ],
    [
      'ttl with Delete',
      celMessages.keepTtlOnlyRetain,
      (p) => {
        (p.spec.virtualDiskTemplates[0] as Mutable).reclaim = { onScaleDown: 'Delete', ttl: '1h' };
      },
    ],
    [
      'Retain keep>0 without ttl',
      celMessages.keepRequiresTtl,
      (p) => {
        (p.spec.virtualDiskTemplates[1] as Mutable).reclaim = { onScaleDown: 'Retain', keep: 2 };
      },
    ],
    [
      'template not referenced',
      celMessages.everyTemplateReferenced,
      (p) => {
        p.spec.virtualMachineTemplate.spec.blockDeviceRefs.splice(1, 1);
      },
    ],
    [
      'reference without template',
      celMessages.everyRefNamesTemplate,
      (p) => {
        p.spec.virtualMachineTemplate.spec.blockDeviceRefs.push({ kind: 'VirtualDisk', name: 'x' });
      },
    ],
    [
      'duplicate reference',
      celMessages.referencedOnce,
      (p) => {
        p.spec.virtualMachineTemplate.spec.blockDeviceRefs.push({
          kind: 'VirtualDisk',
          name: 'root',
        });
      },
    ],
    [
      'healing maxUnhealthy 0%',
      celMessages.maxUnhealthy,
      (p) => {
        (p.spec as Mutable).healing = { startupTimeout: '5m', maxUnhealthy: '0%' };
      },
    ],
    [
      'osType Legacy',
      celMessages.noLegacy,
      (p) => {
        (p.spec.virtualMachineTemplate.spec as Mutable).osType = 'Legacy';
      },
    ],
  ];

  it.each(invalid)('rejects %s with the exact CEL message', async (label, message, edit) => {
    const name = `bad-${label.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
    const text = await rejection(variant(name, edit));
    expect(text).toContain(message);
  });
});

describe('kubectl explain', () => {
  it('explains the pool fields with their descriptions, defaults and constraints', async () => {
    // kubectl wraps long descriptions: compare with the line breaks folded.
    const explain = async (field: string) =>
      (await cluster().kubectl(['explain', field])).replace(/\s+/g, ' ');
    const reclaim = await explain('virtualmachinepool.spec.virtualDiskTemplates.reclaim');
    expect(reclaim).toContain('Reclaim policy of the disk when its replica leaves the pool.');
    expect(reclaim).toContain('how many of the most recently freed disks');
    expect(reclaim).toContain('Delete (the default)');
    const templates = await explain('virtualmachinepool.spec.virtualDiskTemplates');
    expect(templates).toContain('Per-replica disks, 1 to 16');
    const spec = await explain('virtualmachinepool.spec');
    expect(spec).toContain('Desired number of replicas');
  });
});
