/**
 * Executes a plan's actions through the Kube funnel: name-addressed creates, preconditioned deletes,
 * conditioned updates. Expected failures are values; a pass that lost a race says so.
 * @module
 */
import type { Logger } from 'pino';
import type { VirtualMachinePool } from '../api/index.js';
import type { Action } from '../domain/index.js';
import {
  eventFor,
  isGate,
  isMember,
  recordedTargets,
  resourceVersionOf,
  withTargets,
} from '../domain/index.js';
import type { Failure, Kube, Outcome, PoolEvent } from '../kube/index.js';
import { runBounded } from './batch.js';

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

/** Concurrency for creates, updates and deletes. */
export const PARALLEL = 16;

/**
 * Events of one type and reason a pass records one by one; the rest become one combined Event (as
 * client-go's recorder combines similar events), so a scale-up by 1,000 writes 11 Events, not 1,000
 * — each is a write the API server pays for as much as a create.
 */
export const EVENT_BURST = 10;

/** The most a note may hold (events.k8s.io/v1 refuses longer ones). */
const NOTE_LIMIT = 1024;

/** One Event standing for `rest` (at least one), with as many of their notes as fit. */
export function combined(first: PoolEvent, rest: readonly PoolEvent[]): PoolEvent {
  let note = `(combined from ${rest.length} similar events)`;
  for (const e of rest) {
    if (note.length + 1 + e.note.length > NOTE_LIMIT - 2) {
      note += ' …';
      break;
    }
    note += ` ${e.note}`;
  }
  return { ...first, note };
}

/** `stale`: a write conditioned on what the plan read was refused (409); `retry`: anything else transient. */
type Step = 'done' | 'retry' | 'stale' | Failure | { readonly foreign: string };

function settle<T>(o: Outcome<T>, accept: readonly string[] = []): Step {
  if (o.ok || accept.includes(o.reason)) return 'done';
  if (o.reason === 'conflict') return 'stale';
  if (o.reason === 'transient' || o.reason === 'notFound') return 'retry';
  return o;
}

/** Runs the actions in order; creates of VMs start slowly and stop on the first refusal. */
export async function execute(
  kube: Kube,
  pool: VirtualMachinePool,
  actions: readonly Action[],
  log: Logger,
): Promise<Execution> {
  const ns = pool.metadata.namespace ?? '';
  const created = new Map<string, string>();
  // A new VM's own disks follow its create at once, as a pipeline, instead of waiting for every VM.
  const owned = new Map<string, Action[]>();
  for (const a of actions)
    if (a.kind === 'createDisk' && a.ownerVm !== undefined)
      owned.set(a.ownerVm, [...(owned.get(a.ownerVm) ?? []), a]);
  // A new VM's new Retain disks go just before it, in the same task: no VM waits for every disk of
  // every other VM, and a refused disk stops only the VM that needs it.
  const pending = new Map<string, Action>();
  for (const a of actions)
    if (a.kind === 'createDisk' && a.ownerVm === undefined)
      pending.set(a.disk.metadata.name ?? '', a);
  const before = new Map<string, Action[]>();
  for (const a of actions) {
    if (a.kind !== 'createVm') continue;
    const needs = (a.vm.spec.blockDeviceRefs ?? []).flatMap((r) => {
      const d = r.kind === 'VirtualDisk' ? pending.get(r.name) : undefined;
      if (d !== undefined) pending.delete(r.name);
      return d === undefined ? [] : [d];
    });
    if (needs.length > 0) before.set(a.vm.metadata.name ?? '', needs);
  }
  const followed = new Set<Action>([...before.values()].flat());
  const events: Promise<unknown>[] = [];
  const steps: Step[] = [];
  const record = (ev: PoolEvent): void => {
    // Caught where it starts: an action that throws leaves execute before the Events are awaited,
    // and a rejection nobody handles would end the process.
    events.push(
      kube.recordEvent(pool, ev).catch((err: unknown) => {
        log.warn({ err, reason: ev.reason }, 'recording an Event failed');
      }),
    );
  };
  // Beyond EVENT_BURST Events of one type and reason in a pass, the rest are combined into one.
  const seen = new Map<string, PoolEvent[]>();
  const report = (a: Action, ok: boolean, error?: string): void => {
    const ev = eventFor(a, ok, error);
    if (ev === undefined) return;
    const key = `${ev.type}/${ev.reason}`;
    const same = seen.get(key) ?? [];
    if (same.length === 0) seen.set(key, same);
    same.push(ev);
    if (same.length <= EVENT_BURST) record(ev);
  };

  const run = async (a: Action): Promise<Step> => {
    switch (a.kind) {
      case 'claimDisk':
      case 'updateDisk': {
        const o = await kube.updateDisk(a.disk);
        if (o.ok) report(a, true);
        return settle(o);
      }
      case 'createDisk': {
        let disk = a.disk;
        if (a.ownerVm !== undefined) {
          const uid = created.get(a.ownerVm);
          // The VM was created by another reconcile: the next pass creates its disk with its uid.
          if (uid === undefined) return 'done';
          disk = {
            ...disk,
            metadata: {
              ...disk.metadata,
              ownerReferences: (disk.metadata.ownerReferences ?? []).map((r) => ({ ...r, uid })),
            },
          };
        }
        const o = await kube.createDisk(ns, disk);
        if (!o.ok && o.reason !== 'alreadyExists') report(a, false, o.message);
        return settle(o, ['alreadyExists']);
      }
      case 'createVm': {
        const name = a.vm.metadata.name ?? '';
        for (const d of before.get(name) ?? []) {
          const step = await run(d);
          steps.push(step);
          if (step !== 'done') return 'retry';
        }
        const o = await kube.createVm(ns, a.vm);
        if (o.ok || o.reason !== 'alreadyExists') report(a, o.ok, o.ok ? '' : o.message);
        if (!o.ok) return o.reason === 'alreadyExists' ? taken(kube, pool, name) : settle(o);
        created.set(name, o.value.metadata.uid ?? '');
        for (const d of owned.get(name) ?? []) {
          followed.add(d);
          steps.push(await run(d));
        }
        return 'done';
      }
      case 'updateVm': {
        const o = await kube.updateVm(a.vm);
        if (o.ok) report(a, true);
        return settle(o);
      }
      case 'deleteVm': {
        // A 409 is a member changed since the plan read it (protected, say) or replaced under its
        // name: not done, the pass re-plans from a fresh read (L7).
        const pre = { uid: a.uid, ...resourceVersionOf({ metadata: a }) };
        const o = await kube.deleteVm(ns, a.name, pre);
        if (o.ok || (o.reason !== 'notFound' && o.reason !== 'conflict'))
          report(a, o.ok, o.ok ? '' : o.message);
        return settle(o, ['notFound']);
      }
      case 'deleteDisk': {
        const pre = { uid: a.uid, resourceVersion: a.resourceVersion };
        const o = await kube.deleteDisk(ns, a.name, pre);
        if (o.ok) report(a, true);
        return settle(o, ['notFound']);
      }
      case 'dropTargets':
        return dropTargets(kube, pool, a.names);
    }
  };

  const groups = partition(actions);
  for (const [kind, all] of groups) {
    const group = all.filter((a) => !followed.has(a));
    const out =
      kind === 'createVm'
        ? await runBounded(group, PARALLEL, run, (s) => s === 'done')
        : await runBounded(group, PARALLEL, run);
    steps.push(...out);
    // A claim lost to GC or another reconcile: creating the VM now would attach a disk it does not
    // hold. A promotion that failed: a standby refill now would outnumber standby.replicas.
    if (group.some(isGate) && out.some((s) => s !== 'done')) break;
    // A write refused as stale (409) means the pass decided from an old read: stop and re-plan.
    if (out.includes('stale')) break;
  }
  for (const same of seen.values()) {
    const rest = same.slice(EVENT_BURST);
    const first = rest[0];
    if (first !== undefined) record(combined(first, rest));
  }
  await Promise.all(events);
  const failed = steps.filter((s): s is Failure => typeof s === 'object' && 'ok' in s);
  const foreign = steps.flatMap((s) =>
    typeof s === 'object' && 'foreign' in s ? [s.foreign] : [],
  );
  for (const f of failed)
    log.warn({ reason: f.reason, code: f.code, err: f.message }, 'action failed');
  const skipped = actions.length - steps.length;
  return {
    done: steps.filter((s) => s === 'done').length,
    retry: skipped > 0 || foreign.length > 0 || steps.some((s) => s === 'retry' || s === 'stale'),
    failed,
    foreign,
  };
}

/** Consecutive runs of the same action kind, in plan order (each run may go in parallel). */
function partition(actions: readonly Action[]): Array<[Action['kind'], Action[]]> {
  const out: Array<[Action['kind'], Action[]]> = [];
  for (const a of actions) {
    const last = out[out.length - 1];
    if (last?.[0] === a.kind) last[1].push(a);
    else out.push([a.kind, [a]]);
  }
  return out;
}

/**
 * A create met AlreadyExists: our own earlier create (done), or a VM that is not a member holding
 * the name, which would otherwise stay a pending create forever and keep the pool one short.
 */
async function taken(kube: Kube, pool: VirtualMachinePool, name: string): Promise<Step> {
  const got = await kube.getVm(pool.metadata.namespace ?? '', name);
  if (!got.ok) return settle(got);
  return isMember(pool, got.value) ? 'done' : { foreign: name };
}

async function dropTargets(
  kube: Kube,
  pool: VirtualMachinePool,
  names: readonly string[],
): Promise<Step> {
  const fresh = await kube.getPool(pool.metadata.namespace ?? '', pool.metadata.name ?? '');
  if (!fresh.ok) return settle(fresh, ['notFound']);
  if (fresh.value.metadata.uid !== pool.metadata.uid) return 'done';
  const keep = recordedTargets(fresh.value).filter((t) => !names.includes(t.name));
  return settle(await kube.updatePool(withTargets(fresh.value, keep)));
}
