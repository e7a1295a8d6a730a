/**
 * Executes a plan's batches through the Kube funnel ({@link actor}): one batch after the other, the
 * tasks of a batch side by side (new VMs with a slow start), the actions of a task in order. A pass
 * that lost a race says so.
 * @module
 */
import type { Logger } from 'pino';
import type { VirtualMachinePool } from '../api/index.js';
import type { Action } from '../domain/index.js';
import { isGate, tasksOf } from '../domain/index.js';
import type { Failure, Kube } from '../kube/index.js';
import type { Step } from './act.js';
import { actor } from './act.js';
import { PARALLEL, runBounded } from './batch.js';
import { createGuard } from './create-guard.js';
import type { CreateGuard } from './create-guard.js';
import { eventLog } from './event-log.js';

/** What executing a pass's actions came to. */
export interface Execution {
  /** Actions that took effect or were already done. */
  readonly done: number;
  /** Some action lost a race or failed transiently: re-plan. */
  readonly retry: boolean;
  /** Permanent failures (invalid, forbidden), already reported as Events. */
  readonly failed: Failure[];
  /** Names a VM create found taken by a VM that is not the pool's. */
  readonly foreign: string[];
}

/** Runs the batches in order; creates of VMs start slowly and stop on the first refusal. */
export async function execute(
  kube: Kube,
  pool: VirtualMachinePool,
  batches: readonly (readonly Action[])[],
  log: Logger,
  done?: (a: Action) => void,
): Promise<Execution> {
  const events = eventLog(kube, pool, log, done);
  const act = actor(kube, pool, events.report);
  const steps: Step[] = [];
  const creates = batches.reduce((n, b) => n + b.filter((a) => a.kind === 'createVm').length, 0);
  const guard = createGuard(kube, pool, creates);
  for (const batch of batches) {
    const slowStart = batch.some((a) => a.kind === 'createVm') ? isDone : undefined;
    const run = (task: readonly Action[]): Promise<Step> => runTask(task, act, steps, guard);
    const out = await runBounded(tasksOf(batch), PARALLEL, run, slowStart);
    steps.push(...out);
    // A claim lost to GC or another reconcile: creating the VM now would attach a disk it does not
    // hold. A promotion that failed: a standby refill now would outnumber standby.replicas.
    if (batch.some(isGate) && out.some((s) => s !== 'done')) break;
    // A write refused as stale (409) means the pass decided from an old read: stop and re-plan.
    if (out.includes('stale')) break;
  }
  await Promise.all([events.flush(), guard.settle()]);
  return outcome(steps, batches.flat().length, log);
}

const isDone = (s: Step): boolean => s === 'done';

/**
 * One task: the disks before a new VM (a refused one stops the VM), the VM, the disks after it. Its
 * step is the VM's (or the single action's); the others' go to `steps`. A VM the pool no longer
 * records as a create to make (another pass made it, or the desire dropped) is not started: the
 * pass decided from an old read and re-plans.
 */
async function runTask(
  task: readonly Action[],
  act: (a: Action) => Promise<Step>,
  steps: Step[],
  guard: CreateGuard,
): Promise<Step> {
  const at = task.findIndex((a) => a.kind === 'createVm');
  if (at < 0) return act(task[0] as Action);
  const vm = task[at] as Extract<Action, { kind: 'createVm' }>;
  if (!guard.admits(vm.vm.metadata.name ?? '')) return 'stale';
  const step = await createTask(task, at, act, steps);
  guard.completed(step === 'done');
  return step;
}

async function createTask(
  task: readonly Action[],
  at: number,
  act: (a: Action) => Promise<Step>,
  steps: Step[],
): Promise<Step> {
  let head: Step | undefined;
  for (const d of task.slice(0, at)) {
    const step = await act(d);
    steps.push(step);
    if (step !== 'done') {
      head = 'retry';
      break;
    }
  }
  head ??= await act(task[at] as Action);
  // A VM's own disks: created with its uid, or nothing to do when this pass did not create it.
  for (const d of task.slice(at + 1)) steps.push(await act(d));
  return head;
}

/** What the steps of a pass came to; actions never started make the pass retry. */
function outcome(steps: readonly Step[], total: number, log: Logger): Execution {
  const failed = steps.filter((s): s is Failure => typeof s === 'object' && 'ok' in s);
  const foreign = steps.flatMap((s) =>
    typeof s === 'object' && 'foreign' in s ? [s.foreign] : [],
  );
  for (const f of failed)
    log.warn({ reason: f.reason, code: f.code, err: f.message }, 'action failed');
  const skipped = total - steps.length;
  return {
    done: steps.filter(isDone).length,
    retry: skipped > 0 || foreign.length > 0 || steps.some((s) => s === 'retry' || s === 'stale'),
    failed,
    foreign,
  };
}
