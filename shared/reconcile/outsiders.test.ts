import { describe, expect, it } from 'vitest';
import type { VirtualDisk, VirtualMachine, VirtualMachinePool } from '../api/index.js';
import { keys, malformedOf } from '../api/index.js';
import type { ReconcileDeps } from './converge.js';
import { reconcilePool } from './converge.js';
import {
  HOUR,
  NOW,
  at,
  disk,
  notMember,
  pool,
  seededRandom,
  steady,
} from '../../test/unit/builders.js';
import type { Script } from '../../test/unit/fake-kube.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';

function deps(script: Script, p: VirtualMachinePool) {
  const f = fakeKube(script, p);
  const d: ReconcileDeps = {
    kube: f.kube,
    now: () => NOW,
    rand: seededRandom(1),
    log: testLog('outsiders'),
    // One pass: the fake API keeps no state, so every further pass would act the same again.
    maxPasses: 1,
    maxBursts: 0,
    sleep: () => Promise.resolve(),
  };
  return { f, d };
}

/** A member detached from the pool (label and controller removed) that still mounts `disk`. */
function detached(p: VirtualMachinePool, disk: string): VirtualMachine {
  return notMember(p, 'runners-detch', { refs: [{ kind: 'VirtualDisk', name: disk }] });
}

/** A pool of 2 with one steady member and one free Retain disk. */
function world() {
  const p = pool({ replicas: 2 });
  const a = steady(p, 'runners-aaaaa');
  const free = disk(p, 'runners-cache-ffffff', { freeSince: at(-HOUR) });
  const disks: VirtualDisk[] = [...a.disks, free];
  return { p, member: a.vm, disks };
}

const selectors = (calls: readonly { args: readonly unknown[] }[]) => calls.map((c) => c.args[1]);

describe('reconcile: VMs outside the pool keep their disks', () => {
  it('a scale-up reads the namespace and leaves a free disk a detached member mounts alone', async () => {
    const { p, member, disks } = world();
    const { f, d } = deps(
      {
        listVms: ([, selector]) =>
          ok(selector === '' ? [member, detached(p, 'runners-cache-ffffff')] : [member]),
        listDisks: () => ok(disks),
      },
      p,
    );
    await reconcilePool(d, 'ci', 'runners');
    expect(selectors(f.of('listVms'))).toEqual([`${keys.poolUid}=pool-uid-1`, '']);
    // The new member got a new cache disk; the mounted one was not bound (its stamp is cleared: in use).
    const created = f.of('createDisk').map((c) => (c.args[1] as VirtualDisk).metadata.name);
    expect(created.some((n) => n?.startsWith('runners-cache-'))).toBe(true);
    const status = (f.of('updatePoolStatus')[0]?.args[0] as VirtualMachinePool).status;
    expect(status?.intent?.bindings?.map((b) => b.disk)).not.toContain('runners-cache-ffffff');
  });

  it('without an outsider the free disk is claimed, after the same one extra list', async () => {
    const { p, member, disks } = world();
    const { f, d } = deps({ listVms: () => ok([member]), listDisks: () => ok(disks) }, p);
    await reconcilePool(d, 'ci', 'runners');
    expect(selectors(f.of('listVms'))).toEqual([`${keys.poolUid}=pool-uid-1`, '']);
    const touched = f.of('updateDisk').map((c) => (c.args[0] as VirtualDisk).metadata.name);
    expect(touched).toContain('runners-cache-ffffff');
  });

  it('a pool at rest reads only its own VMs (no namespace list)', async () => {
    const p = pool({ replicas: 1 });
    const a = steady(p, 'runners-aaaaa');
    const converged = { ...p, status: undefined };
    const { f, d } = deps({ listVms: () => ok([a.vm]), listDisks: () => ok(a.disks) }, converged);
    await reconcilePool(d, 'ci', 'runners');
    expect(selectors(f.of('listVms'))).toEqual([`${keys.poolUid}=pool-uid-1`]);
  });

  it('a refused namespace list acts on nothing and is reported as refused', async () => {
    const { p, member, disks } = world();
    const { f, d } = deps(
      {
        listVms: ([, selector]) => (selector === '' ? fail('forbidden') : ok([member])),
        listDisks: () => ok(disks),
      },
      p,
    );
    const out = await reconcilePool(d, 'ci', 'runners');
    expect(out.kind).toBe('failed');
    expect(f.of('createVm')).toEqual([]);
    expect(f.of('updateDisk')).toEqual([]);
  });
});

describe('reconcile: a VM of the namespace that does not parse', () => {
  const unreadable = (refs: unknown) =>
    malformedOf(
      'VirtualMachine',
      { metadata: { name: 'odd', namespace: 'ci' }, spec: { blockDeviceRefs: refs } },
      'spec.runPolicy: Invalid option',
    );

  it('keeps the free disk it names from being bound, though the model could not read it', async () => {
    const { p, member, disks } = world();
    const { f, d } = deps(
      {
        listVms: ([, selector]) =>
          selector === ''
            ? {
                ok: true,
                value: [member],
                malformed: [unreadable([{ kind: 'VirtualDisk', name: 'runners-cache-ffffff' }])],
              }
            : ok([member]),
        listDisks: () => ok(disks),
      },
      p,
    );
    await reconcilePool(d, 'ci', 'runners');
    // The new member gets a new cache disk, not the one the unreadable VM names.
    const made = f.of('createVm').map((c) => c.args[1] as VirtualMachine);
    expect(made).toHaveLength(1);
    const refs = (made[0]?.spec.blockDeviceRefs ?? []).map((r) => r.name);
    expect(refs).not.toContain('runners-cache-ffffff');
    expect(refs.some((n) => n.startsWith('runners-cache-'))).toBe(true);
  });

  it('whose references cannot be read at all: the pool acts on nothing and says why', async () => {
    const { p, member, disks } = world();
    const { f, d } = deps(
      {
        listVms: ([, selector]) =>
          selector === ''
            ? { ok: true, value: [member], malformed: [unreadable('garbage')] }
            : ok([member]),
        listDisks: () => ok(disks),
      },
      p,
    );
    await reconcilePool(d, 'ci', 'runners');
    expect(f.of('createVm')).toEqual([]);
    expect(f.of('updateDisk')).toEqual([]);
    const status = f.of('updatePoolStatus').at(-1)?.args[0] as VirtualMachinePool | undefined;
    expect(status?.status?.conditions?.find((c) => c.type === 'Synced')?.reason).toBe(
      'MalformedMember',
    );
  });
});
