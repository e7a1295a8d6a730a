import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../api/index.js';
import type { Action } from '../domain/index.js';
import { disk, pool, vm } from '../../test/unit/builders.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import { actor } from './act.js';

const p = pool();
const member = vm(p, 'runners-aaaaa');

/** An actor over a scripted fake, with the reports it made as `kind:ok`. */
function act(script: Parameters<typeof fakeKube>[0] = {}) {
  const f = fakeKube(script, p);
  const reports: string[] = [];
  const run = actor(f.kube, p, (a, okay) => reports.push(`${a.kind}:${String(okay)}`));
  return { f, run, reports };
}

describe('actor', () => {
  it('creates a VM, then gives the disk it owns the uid the create returned', async () => {
    const { f, run, reports } = act();
    const owned = disk(p, 'runners-aaaaa-root', { template: 'root', owner: member });
    expect(await run({ kind: 'createVm', vm: member })).toBe('done');
    expect(await run({ kind: 'createDisk', disk: owned, ownerVm: 'runners-aaaaa' })).toBe('done');
    const sent = f.of('createDisk')[0]?.args[1] as typeof owned;
    expect(sent.metadata.ownerReferences?.[0]?.uid).toBe('uid-runners-aaaaa');
    expect(reports).toEqual(['createVm:true']);
  });

  it('leaves a disk whose VM another reconcile created to the next pass', async () => {
    const { f, run } = act();
    const owned = disk(p, 'runners-bbbbb-root', { template: 'root', owner: member });
    expect(await run({ kind: 'createDisk', disk: owned, ownerVm: 'runners-bbbbb' })).toBe('done');
    expect(f.of('createDisk')).toEqual([]);
  });

  it('turns a name held by a VM outside the pool into a foreign step', async () => {
    const outsider: VirtualMachine = { ...member, metadata: { name: 'runners-aaaaa' } };
    const { run, reports } = act({
      createVm: () => fail('alreadyExists'),
      getVm: () => ok(outsider),
    });
    expect(await run({ kind: 'createVm', vm: member })).toEqual({ foreign: 'runners-aaaaa' });
    expect(reports).toEqual([]);
  });

  it('reads a delete conflict as stale (re-plan), a missing member as done, a 503 as retry', async () => {
    const del: Action = { kind: 'deleteVm', name: 'runners-aaaaa', uid: 'u', why: 'scaleDown' };
    expect(await act({ deleteVm: () => fail('conflict') }).run(del)).toBe('stale');
    expect(await act({ deleteVm: () => fail('notFound') }).run(del)).toBe('done');
    expect(await act({ deleteVm: () => fail('transient') }).run(del)).toBe('retry');
    const refused = await act({ updateVm: () => fail('invalid') }).run({
      kind: 'updateVm',
      vm: member,
      why: ['rollout'],
    });
    expect(refused).toMatchObject({ ok: false, reason: 'invalid' });
  });
});
