import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachinePool } from '../api/index.js';
import type { PoolEvent } from '../kube/index.js';
import type { Action } from '../domain/index.js';
import { batchesOf, newDisk, newMember } from '../domain/index.js';
import { execute } from './execute.js';
import { disk, notMember, pool, runnersDiskTemplates, vm } from '../../test/unit/builders.js';
import type { Script } from '../../test/unit/fake-kube.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';

const p = pool();
const log = testLog('execute');
const [root, cache] = runnersDiskTemplates() as [
  ReturnType<typeof runnersDiskTemplates>[number],
  ReturnType<typeof runnersDiskTemplates>[number],
];

const createVm = (name: string): Action => ({ kind: 'createVm', vm: newMember(p, name, 'h', []) });
const vmDisk = (vmName: string): Action => ({
  kind: 'createDisk',
  disk: newDisk(p, root, `${vmName}-root`, { kind: 'VirtualMachine', name: vmName }),
  ownerVm: vmName,
});
const retainDisk = (name: string): Action => ({
  kind: 'createDisk',
  disk: newDisk(p, cache, name, { kind: 'VirtualMachinePool', name: 'runners', uid: 'pool-uid-1' }),
});
const deleteVm = (name: string): Action => ({
  kind: 'deleteVm',
  name,
  uid: `uid-${name}`,
  resourceVersion: '7',
  why: 'scaleDown',
});
const deleteDisk = (name: string): Action => ({
  kind: 'deleteDisk',
  name,
  uid: `uid-${name}`,
  resourceVersion: '3',
  why: 'gc',
});

function events(f: ReturnType<typeof fakeKube>): string[] {
  return f.of('recordEvent').map((c) => (c.args[1] as PoolEvent).reason);
}

/** The pool as its fence wrote it: every VM the actions create recorded as a create to make. */
function fenced(actions: readonly Action[]): VirtualMachinePool {
  const creates = actions.flatMap((a) => (a.kind === 'createVm' ? [a.vm.metadata.name ?? ''] : []));
  return { ...p, status: { ...p.status, intent: { creates } } };
}

async function run(actions: Action[], script: Script = {}) {
  const at = fenced(actions);
  const f = fakeKube(script, at);
  // The plan's order, in the batches order() makes of it.
  const out = await execute(f.kube, at, batchesOf(actions), log);
  return { f, out };
}

describe('execute: every outcome of the funnel', () => {
  it('counts successes, records Events for creates and deletes, and asks for nothing more', async () => {
    const { f, out } = await run([createVm('runners-aaaaa'), deleteVm('runners-bbbbb')]);
    expect(out).toEqual({ done: 2, retry: false, failed: [], foreign: [] });
    expect(events(f)).toEqual(['SuccessfulCreate', 'SuccessfulDelete']);
  });

  it('creates a new VM’s own disk right after it, owned by the uid the create returned', async () => {
    const { f, out } = await run([createVm('runners-aaaaa'), vmDisk('runners-aaaaa')]);
    expect(out.done).toBe(2);
    const created = f.of('createDisk')[0]?.args[1] as ReturnType<typeof newDisk>;
    expect(created.metadata.ownerReferences?.[0]?.uid).toBe('uid-runners-aaaaa');
    expect(f.calls.map((c) => c.method).filter((m) => m !== 'recordEvent')).toEqual([
      'createVm',
      'createDisk',
    ]);
  });

  it('leaves the disk of a VM another reconcile created to the next pass (its uid is unknown)', async () => {
    const { f, out } = await run([vmDisk('runners-zzzzz')]);
    expect(out).toMatchObject({ done: 1, retry: false });
    expect(f.of('createDisk')).toEqual([]);
  });

  it.each(['alreadyExists'] as const)('a disk create answered %s is done', async (reason) => {
    const { out } = await run([retainDisk('runners-cache-aaaaaa')], {
      createDisk: () => fail(reason),
    });
    expect(out).toMatchObject({ done: 1, retry: false, failed: [] });
  });

  it('a VM create that meets our own member under the name is done, with no second Event', async () => {
    const { f, out } = await run([createVm('runners-aaaaa')], {
      createVm: () => fail('alreadyExists'),
      getVm: () => ok(vm(p, 'runners-aaaaa')),
    });
    expect(out).toEqual({ done: 1, retry: false, failed: [], foreign: [] });
    expect(events(f)).toEqual([]);
  });

  it('a VM create that meets a foreign VM under the name reports the name and re-plans', async () => {
    const stranger = notMember(p, 'runners-aaaaa', { labelled: true });
    const { out } = await run([createVm('runners-aaaaa')], {
      createVm: () => fail('alreadyExists'),
      getVm: () => ok(stranger),
    });
    expect(out).toMatchObject({ done: 0, retry: true, foreign: ['runners-aaaaa'] });
  });

  it('a VM create the API refuses fails with a FailedCreate Event and stops the slow start', async () => {
    const names = ['runners-aaaaa', 'runners-bbbbb', 'runners-ccccc', 'runners-ddddd'];
    const { f, out } = await run(names.map(createVm), {
      createVm: () => fail('invalid', 'spec.cpu.cores: must be at least 1'),
    });
    expect(f.of('createVm')).toHaveLength(1);
    expect(out.failed.map((x) => x.reason)).toEqual(['invalid']);
    expect(out.retry).toBe(true);
    expect(events(f)).toEqual(['FailedCreate']);
  });

  it.each(['conflict', 'transient', 'notFound'] as const)(
    'an update answered %s re-plans',
    async (reason) => {
      const { out } = await run(
        [{ kind: 'updateVm', vm: vm(p, 'runners-aaaaa'), why: ['rollout'] }],
        {
          updateVm: () => fail(reason),
        },
      );
      expect(out).toMatchObject({ done: 0, retry: true, failed: [] });
    },
  );

  it.each(['invalid', 'forbidden'] as const)(
    'an update answered %s is a failure',
    async (reason) => {
      const { out } = await run(
        [{ kind: 'updateDisk', disk: disk(p, 'runners-cache-aaaaaa'), why: ['grow'] }],
        { updateDisk: () => fail(reason) },
      );
      expect(out.failed.map((x) => x.reason)).toEqual([reason]);
      expect(out.retry).toBe(false);
    },
  );

  it('a VM delete answered notFound is done (gone) with no Event', async () => {
    const { f, out } = await run([deleteVm('runners-aaaaa')], { deleteVm: () => fail('notFound') });
    expect(out).toMatchObject({ done: 1, retry: false });
    expect(events(f)).toEqual([]);
  });

  it('a VM delete carries the uid and resourceVersion the plan read; a conflict re-plans and stops the pass', async () => {
    const { f, out } = await run([deleteVm('runners-aaaaa'), deleteDisk('runners-cache-aaaaaa')], {
      deleteVm: () => fail('conflict'),
    });
    expect(f.of('deleteVm')[0]?.args[2]).toEqual({
      uid: 'uid-runners-aaaaa',
      resourceVersion: '7',
    });
    expect(out).toMatchObject({ done: 0, retry: true, failed: [] });
    // The member changed since the read (protected, say): nothing after it runs on the stale plan.
    expect(f.of('deleteDisk')).toEqual([]);
    expect(events(f)).toEqual([]);
  });

  it('a VM delete that is forbidden fails with a FailedDelete Event', async () => {
    const { f, out } = await run([deleteVm('runners-aaaaa')], {
      deleteVm: () => fail('forbidden'),
    });
    expect(out.failed).toHaveLength(1);
    expect(events(f)).toEqual(['FailedDelete']);
  });

  it('a disk delete carries uid and resourceVersion; a changed disk (conflict) re-plans', async () => {
    const { f, out } = await run([deleteDisk('runners-cache-aaaaaa')], {
      deleteDisk: () => fail('conflict'),
    });
    expect(f.of('deleteDisk')[0]?.args[2]).toEqual({
      uid: 'uid-runners-cache-aaaaaa',
      resourceVersion: '3',
    });
    expect(out).toMatchObject({ done: 0, retry: true, failed: [] });
    expect(events(f)).toEqual([]);
  });

  it('a new VM’s new Retain disk is created just before it, in the same task', async () => {
    const withCache = (name: string): Action => ({
      kind: 'createVm',
      vm: newMember(p, name, 'h', [{ kind: 'VirtualDisk', name: `${name}-cache` }]),
    });
    const names = ['runners-aaaaa', 'runners-bbbbb'];
    const { f, out } = await run([
      ...names.map((n) => retainDisk(`${n}-cache`)),
      ...names.map(withCache),
      ...names.map(vmDisk),
    ]);
    expect(out).toEqual({ done: 6, retry: false, failed: [], foreign: [] });
    const order = f.calls
      .filter((c) => c.method !== 'recordEvent' && c.method !== 'getPool')
      .map((c) => `${c.method} ${(c.args[1] as { metadata: { name: string } }).metadata.name}`);
    // The pool is read again once the first VM is made, the second still to start.
    expect(f.of('getPool')).toHaveLength(1);
    // The slow start's window is 1 for the first VM: its three calls come before the second's.
    expect(order).toEqual([
      'createDisk runners-aaaaa-cache',
      'createVm runners-aaaaa',
      'createDisk runners-aaaaa-root',
      'createDisk runners-bbbbb-cache',
      'createVm runners-bbbbb',
      'createDisk runners-bbbbb-root',
    ]);
  });

  it('a refused Retain disk stops the VM that needs it, and the slow start', async () => {
    const vmA: Action = {
      kind: 'createVm',
      vm: newMember(p, 'runners-aaaaa', 'h', [{ kind: 'VirtualDisk', name: 'c-a' }]),
    };
    const vmB: Action = {
      kind: 'createVm',
      vm: newMember(p, 'runners-bbbbb', 'h', [{ kind: 'VirtualDisk', name: 'c-b' }]),
    };
    const { f, out } = await run([retainDisk('c-a'), retainDisk('c-b'), vmA, vmB], {
      createDisk: () => fail('invalid', 'denied by policy'),
    });
    expect(f.of('createVm')).toEqual([]);
    expect(f.of('createDisk')).toHaveLength(1);
    expect(out.failed.map((x) => x.message)).toEqual(['denied by policy']);
    expect(out.retry).toBe(true);
  });

  it('beyond ten Events of one reason in a pass, the rest are combined into one', async () => {
    const names = Array.from({ length: 25 }, (_, i) => `runners-${String(i).padStart(5, 'b')}`);
    const { f, out } = await run(names.map(createVm));
    expect(out.done).toBe(25);
    const recorded = f.of('recordEvent').map((c) => c.args[1] as PoolEvent);
    expect(recorded).toHaveLength(11);
    expect(recorded.every((e) => e.reason === 'SuccessfulCreate')).toBe(true);
    const last = recorded[10]?.note ?? '';
    expect(last).toMatch(/^\(combined from 15 similar events\) Created VirtualMachine "/);
    expect(last.length).toBeLessThanOrEqual(1024);
    const named = names.filter((n) => recorded.some((e) => e.note.includes(`"${n}"`)));
    expect(named).toHaveLength(25);
  });

  it('a combined Event note stays within the API server’s 1024 characters', async () => {
    const names = Array.from({ length: 200 }, (_, i) => `runners-${String(i).padStart(5, 'b')}`);
    const { f } = await run(names.map(createVm));
    const notes = f.of('recordEvent').map((c) => (c.args[1] as PoolEvent).note);
    expect(notes).toHaveLength(11);
    expect(notes[10]).toMatch(/^\(combined from 190 similar events\) .* …$/);
    expect(notes[10]?.length).toBeLessThanOrEqual(1024);
  });

  it('a lost claim stops the pass before the VM that would use the disk', async () => {
    const claim: Action = {
      kind: 'claimDisk',
      disk: disk(p, 'runners-cache-aaaaaa'),
      forVm: 'runners-aaaaa',
    };
    const { f, out } = await run([claim, createVm('runners-aaaaa')], {
      updateDisk: () => fail('conflict'),
    });
    expect(f.of('createVm')).toEqual([]);
    expect(out).toMatchObject({ done: 0, retry: true });
  });

  it('a failed promotion stops the pass before the standby refill (standby would exceed its count)', async () => {
    const promote: Action = {
      kind: 'updateVm',
      vm: vm(p, 'runners-sssss'),
      why: ['promote'],
    };
    const { f, out } = await run([promote, createVm('runners-ttttt')], {
      updateVm: () => fail('conflict'),
    });
    expect(f.of('createVm')).toEqual([]);
    expect(out).toMatchObject({ done: 0, retry: true });
    expect(events(f)).toEqual([]);
    const fine = await run([promote, createVm('runners-ttttt')]);
    expect(fine.f.of('createVm')).toHaveLength(1);
    expect(events(fine.f)).toEqual(['StandbyPromoted', 'SuccessfulCreate']);
  });

  it('drops carried-out targets on a fresh read of the pool, and only from the same pool', async () => {
    const dropped: Action = { kind: 'dropTargets', names: ['runners-aaaaa'] };
    const same = await run([dropped]);
    expect(same.f.of('updatePool')).toHaveLength(1);
    const replaced = await run([dropped], {
      getPool: () => ok({ ...p, metadata: { ...p.metadata, uid: 'another' } }),
    });
    expect(replaced.f.of('updatePool')).toEqual([]);
    expect(replaced.out.done).toBe(1);
    const gone = await run([dropped], { getPool: () => fail('notFound') });
    expect(gone.out.done).toBe(1);
  });

  it('an Event the API server refuses changes nothing about the outcome', async () => {
    const { out } = await run([createVm('runners-aaaaa')], {
      recordEvent: () => fail('forbidden'),
    });
    expect(out).toEqual({ done: 1, retry: false, failed: [], foreign: [] });
  });

  it('Events a user looks for: a disk create refused, a disk grown, a disk collected', async () => {
    const refused = await run([retainDisk('runners-cache-aaaaaa')], {
      createDisk: () => fail('forbidden', 'quota exceeded'),
    });
    const [warning] = refused.f.of('recordEvent').map((c) => c.args[1] as PoolEvent);
    expect(warning).toMatchObject({ type: 'Warning', reason: 'FailedCreate' });
    expect(warning?.note).toBe(
      'Failed to create VirtualDisk "runners-cache-aaaaaa": quota exceeded',
    );
    const big = disk(p, 'runners-cache-bbbbbb', { size: '50Gi' });
    const grown = await run([
      { kind: 'updateDisk', disk: big, why: ['grow'] },
      { kind: 'claimDisk', disk: big, forVm: 'runners-aaaaa', grownTo: '50Gi' },
      { kind: 'claimDisk', disk: big, forVm: 'runners-bbbbb' },
      deleteDisk('runners-cache-cccccc'),
    ]);
    const notes = grown.f.of('recordEvent').map((c) => c.args[1] as PoolEvent);
    expect(notes.map((e) => e.reason)).toEqual(['DiskSizeGrown', 'DiskSizeGrown', 'DiskCollected']);
    expect(notes[0]?.note).toBe(
      'Grew VirtualDisk "runners-cache-bbbbbb" to 50Gi, the size of its template.',
    );
    expect(notes[2]?.note).toContain('free for longer than its template ttl');
  });
});

describe('execute: creates stay on what the pool still asks for', () => {
  const names = Array.from({ length: 6 }, (_, i) => `runners-aaaa${'bcdfgh'.charAt(i)}`);
  const creates = names.map(createVm);
  const madeBy = (f: ReturnType<typeof fakeKube>): string[] =>
    f.of('createVm').map((c) => (c.args[1] as VirtualMachine).metadata.name ?? '');
  const intending = (left: readonly string[], edit: Partial<VirtualMachinePool> = {}) =>
    ok({ ...p, ...edit, status: { intent: { creates: [...left] } } });

  it('a name another pass made or dropped meanwhile is not created again: the pass re-plans', async () => {
    // The second read finds the intent without the last three (a scale taken back dropped them).
    const { f, out } = await run(creates, { getPool: () => intending(names.slice(0, 3)) });
    expect(madeBy(f)).toEqual(names.slice(0, 3));
    expect(out.retry).toBe(true);
    expect(f.of('getPool').length).toBeGreaterThanOrEqual(1);
  });

  it('a pool deleted, paused, re-created under its name or given a new spec while the creates run stops them', async () => {
    const answers = {
      deleted: () => fail('notFound'),
      unreadable: () => fail('invalid'),
      paused: () => intending(names, { spec: { ...p.spec, paused: true } }),
      terminating: () =>
        intending(names, {
          metadata: { ...p.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
        }),
      recreated: () => intending(names, { metadata: { ...p.metadata, uid: 'another' } }),
      rescaled: () =>
        intending(names, {
          metadata: { ...p.metadata, generation: (p.metadata.generation ?? 1) + 1 },
        }),
    };
    for (const [how, getPool] of Object.entries(answers)) {
      const { f, out } = await run(creates, { getPool });
      // The read starts after the first create; the second may already be under way.
      expect(madeBy(f).length, how).toBeLessThanOrEqual(2);
      expect(out.retry, how).toBe(true);
    }
  });

  it('a read that fails keeps the last answer, and the pool is read about once per window', async () => {
    const many = Array.from({ length: 64 }, (_, i) =>
      createVm(`runners-${String(i).padStart(5, 'b')}`),
    );
    const all = many.map((a) => (a.kind === 'createVm' ? (a.vm.metadata.name ?? '') : ''));
    const flaky = await run(many, {
      getPool: (_a, nth) => (nth % 2 === 0 ? fail('transient') : intending(all)),
    });
    expect(flaky.f.of('getPool').length).toBeGreaterThanOrEqual(2);
    expect(flaky.out).toMatchObject({ done: 64, retry: false });
    // After 1, 2, 4, 8, 16, then every 16 completions, and never once the last create started.
    const fine = await run(many);
    expect(fine.out).toMatchObject({ done: 64, retry: false });
    const reads = fine.f.of('getPool').length;
    expect(reads).toBeGreaterThanOrEqual(2);
    expect(reads).toBeLessThanOrEqual(5 + 64 / 16);
    const one = await run([createVm('runners-aaaab')]);
    expect(one.f.of('getPool')).toEqual([]);
  });

  it('reads the pool from the watch cache, no older than the fence, then than its last answer', async () => {
    const many = Array.from({ length: 20 }, (_, i) =>
      createVm(`runners-${String(i).padStart(5, 'c')}`),
    );
    const at = fenced(many);
    const written = { ...at, metadata: { ...at.metadata, resourceVersion: '4711' } };
    const answer = (nth: number) =>
      ok({ ...written, metadata: { ...written.metadata, resourceVersion: String(5000 + nth) } });
    const f = fakeKube({ getPool: (_a, nth) => answer(nth) }, written);
    const out = await execute(f.kube, written, batchesOf(many), log);
    expect(out).toMatchObject({ done: 20, retry: false });
    const asked = f.of('getPool').map((c) => c.args);
    expect(asked.length).toBeGreaterThanOrEqual(2);
    expect(asked).toEqual(
      asked.map((_, i) => ['ci', 'runners', i === 0 ? '4711' : String(5000 + i - 1)]),
    );
  });

  it('a stop is never taken back by a later answer (an API server whose cache lags)', async () => {
    const many = Array.from({ length: 64 }, (_, i) =>
      createVm(`runners-${String(i).padStart(5, 'd')}`),
    );
    const all = many.map((a) => (a.kind === 'createVm' ? (a.vm.metadata.name ?? '') : ''));
    // The first answer drops all but ten; every later one still records them all.
    const { f, out } = await run(many, {
      getPool: (_a, nth) => intending(nth === 0 ? all.slice(0, 10) : all),
    });
    expect(f.of('getPool').length).toBeGreaterThanOrEqual(2);
    expect(madeBy(f).length).toBeGreaterThan(0);
    expect(madeBy(f).every((n) => all.slice(0, 10).includes(n))).toBe(true);
    expect(out.retry).toBe(true);
  });
});

describe('execute: nothing left unhandled', () => {
  it('a pool read beside the creates that throws is never an unhandled rejection: the pass throws it', async () => {
    const many = Array.from({ length: 8 }, (_, i) =>
      createVm(`runners-aaaa${'bcdfghjk'.charAt(i)}`),
    );
    const at = fenced(many);
    const f = fakeKube(
      {
        getPool: () => {
          throw new Error('crashed after API call 3');
        },
      },
      at,
    );
    await expect(execute(f.kube, at, batchesOf(many), log)).rejects.toThrow(
      'crashed after API call 3',
    );
    expect(f.of('getPool').length).toBeGreaterThan(0);
  });

  it('an Event call that fails while an action fails too never becomes an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      const f = fakeKube(
        {
          // The Event of the create fails a little later, after execute has already given up.
          recordEvent: () =>
            new Promise((_resolve, reject) =>
              setTimeout(() => {
                reject(new Error('event call broke'));
              }, 20),
            ),
          deleteVm: () => Promise.reject(new Error('delete broke')),
        },
        p,
      );
      await expect(
        execute(
          f.kube,
          fenced([createVm('runners-aaaaa')]),
          batchesOf([createVm('runners-aaaaa'), deleteVm('runners-bbbbb')]),
          log,
        ),
      ).rejects.toThrow('delete broke');
      await new Promise((r) => setTimeout(r, 100));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
