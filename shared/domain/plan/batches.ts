/**
 * The plan's actions as the executor runs them: batches one after the other, the tasks of a batch
 * side by side, the actions of a task in order. Consecutive actions of one kind form a batch. A new
 * VM is a task with its new Retain disks just before it and its own (Delete) disks just after it, so
 * no VM waits for every disk of every other VM, and a refused disk stops only the VM that needs it.
 * @module
 */
import type { Action, CreateDisk } from './actions.js';

/** Batches of `actions` (in execution order), each new VM's disks moved into its task. */
export function batchesOf(actions: readonly Action[]): Action[][] {
  const vms = new Set<string>();
  for (const a of actions) if (a.kind === 'createVm') vms.add(a.vm.metadata.name ?? '');
  // Each new Retain disk goes before the first new VM that references it.
  const pending = new Map<string, CreateDisk>();
  for (const a of actions)
    if (a.kind === 'createDisk' && a.ownerVm === undefined)
      pending.set(a.disk.metadata.name ?? '', a);
  const before = new Map<string, CreateDisk[]>();
  for (const a of actions) {
    if (a.kind !== 'createVm') continue;
    const needs = (a.vm.spec.blockDeviceRefs ?? []).flatMap((r) => {
      const d = r.kind === 'VirtualDisk' ? pending.get(r.name) : undefined;
      if (d !== undefined) pending.delete(r.name);
      return d === undefined ? [] : [d];
    });
    before.set(a.vm.metadata.name ?? '', needs);
  }
  const owned = new Map<string, CreateDisk[]>();
  for (const a of actions)
    if (a.kind === 'createDisk' && a.ownerVm !== undefined && vms.has(a.ownerVm))
      owned.set(a.ownerVm, [...(owned.get(a.ownerVm) ?? []), a]);
  const moved = new Set<Action>([...before.values(), ...owned.values()].flat());
  return runsOf(actions)
    .map((run) =>
      run.flatMap((a): Action[] => {
        if (moved.has(a)) return [];
        if (a.kind !== 'createVm') return [a];
        const name = a.vm.metadata.name ?? '';
        return [...(before.get(name) ?? []), a, ...(owned.get(name) ?? [])];
      }),
    )
    .filter((b) => b.length > 0);
}

/** Consecutive runs of one action kind, in order. */
function runsOf(actions: readonly Action[]): Action[][] {
  const out: Action[][] = [];
  for (const a of actions) {
    const last = out[out.length - 1];
    if (last?.[0]?.kind === a.kind) last.push(a);
    else out.push([a]);
  }
  return out;
}

/**
 * The tasks of a batch from {@link batchesOf}: one per action, except that a new VM's task holds its
 * Retain disks before it and its own disks after it.
 */
export function tasksOf(batch: readonly Action[]): Action[][] {
  if (!batch.some((a) => a.kind === 'createVm')) return batch.map((a) => [a]);
  const tasks: Action[][] = [];
  let task: Action[] = [];
  for (const a of batch) {
    const follows = a.kind === 'createDisk' && a.ownerVm !== undefined;
    if (!follows && task.some((x) => x.kind === 'createVm')) {
      tasks.push(task);
      task = [];
    }
    task.push(a);
  }
  if (task.length > 0) tasks.push(task);
  return tasks;
}
