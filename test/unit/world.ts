/**
 * A pure, in-memory stand-in for the API server, for plan-level property tests: applies a plan's
 * status write and actions the way the executor would (creates by name, deletes by uid, updates by
 * replacement), so a test can run reconcile after reconcile and look at every step.
 * @module
 */
import type {
  Intent,
  VirtualDisk,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../../shared/api/index.js';
import type { Action, Observed, Plan, Rand } from '../../shared/domain/index.js';
import {
  plan,
  recordedTargets,
  rfc3339,
  withTargets,
  withoutDoneDeletes,
} from '../../shared/domain/index.js';
import { seededRandom } from '../../local/simulator/rng.js';

/** The objects of one pool's namespace. */
export interface World {
  pool: VirtualMachinePool;
  vms: VirtualMachine[];
  disks: VirtualDisk[];
  /** Claims of the namespace (absent: none). */
  claims?: VirtualMachineClaim[];
}

/**
 * The pool's recorded intent without the deletes that are done (their member Terminating or gone):
 * those are inert and stay until a write that happens anyway drops them. Undefined: nothing pending.
 */
export function openIntent(w: World): Intent | undefined {
  const live = new Set(
    w.vms.filter((v) => v.metadata.deletionTimestamp === undefined).map((v) => v.metadata.uid),
  );
  return withoutDoneDeletes(w.pool.status, live as Set<string>)?.intent;
}

/** What a reconcile reads. */
export function observedOf(w: World): Observed {
  return { pool: w.pool, vms: w.vms, disks: w.disks, claims: w.claims ?? [] };
}

const nameOf = (o: { metadata: { name?: string | undefined } }): string => o.metadata.name ?? '';

/** Applies a plan as the executor would, with `now` as the creation time of new objects. */
export function apply(w: World, p: Plan, now: Date): World {
  // The executor starts no create the pool's intent does not record (its guard re-reads it): a
  // plan that creates a name it did not record would be stopped there.
  const recorded = new Set(p.status.intent?.creates ?? []);
  for (const a of p.actions)
    if (a.kind === 'createVm' && !recorded.has(nameOf(a.vm)))
      throw new Error(`plan creates ${nameOf(a.vm)} without recording it in intent.creates`);
  let out: World = p.writeStatus || p.fenced ? { ...w, pool: { ...w.pool, status: p.status } } : w;
  if (p.actions.every((a) => a.kind === 'createVm' || a.kind === 'createDisk'))
    return createAll(out, p.actions, now);
  for (const a of p.actions) out = applyAction(out, a, now).w;
  return out;
}

/** A VM as the API server stores a create: a uid, the creation time, no status yet. */
function createdVm(vm: VirtualMachine, now: Date): VirtualMachine {
  const meta = { ...vm.metadata, uid: `uid-${nameOf(vm)}`, creationTimestamp: rfc3339(now) };
  return settle({ ...vm, metadata: meta, status: {} });
}

/** A disk as the API server stores a create: a uid. */
function createdDisk(d: VirtualDisk): VirtualDisk {
  return { ...d, metadata: { ...d.metadata, uid: `uid-${nameOf(d)}` } };
}

/**
 * A plan of creates only (a scale-up), applied as {@link applyAction} applies them one by one, in
 * one pass: growing a pool of thousands costs linear time, not a copy of the lists per create.
 */
function createAll(w: World, actions: readonly Action[], now: Date): World {
  const vms = [...w.vms];
  const disks = [...w.disks];
  const vmNames = new Set(vms.map(nameOf));
  const diskNames = new Set(disks.map(nameOf));
  for (const a of actions) {
    if (a.kind === 'createVm' && !vmNames.has(nameOf(a.vm))) {
      vms.push(createdVm(a.vm, now));
      vmNames.add(nameOf(a.vm));
    } else if (a.kind === 'createDisk' && !diskNames.has(nameOf(a.disk))) {
      disks.push(createdDisk(a.disk));
      diskNames.add(nameOf(a.disk));
    }
  }
  return { ...w, vms, disks };
}

/**
 * The objects a plan was made from, by name: an update of an object that changed since (another
 * reconcile's write) fails as a stale resourceVersion would. Objects are never mutated in a world,
 * so identity stands for the resourceVersion.
 */
export interface Read {
  readonly vms: ReadonlyMap<string, VirtualMachine>;
  readonly disks: ReadonlyMap<string, VirtualDisk>;
}

/** What a plan made from `w` read. */
export function readOf(w: World): Read {
  return {
    vms: new Map(w.vms.map((v) => [nameOf(v), v])),
    disks: new Map(w.disks.map((d) => [nameOf(d), d])),
  };
}

/** One action, as the API server would take it; `ok` false when a precondition failed. */
export function applyAction(
  w: World,
  a: Action,
  now: Date,
  read?: Read,
): { w: World; ok: boolean } {
  const { pool, vms, disks } = w;
  const stale = <T>(list: readonly T[], name: string, was: ReadonlyMap<string, T> | undefined) =>
    was !== undefined && list.find((o) => nameOf(o as VirtualMachine) === name) !== was.get(name);
  switch (a.kind) {
    case 'createVm':
      if (vms.some((v) => nameOf(v) === nameOf(a.vm))) return { w, ok: true };
      return { w: { ...w, vms: [...vms, createdVm(a.vm, now)] }, ok: true };
    case 'updateVm':
    case 'bindClaim':
    case 'releaseClaim':
      if (stale(vms, nameOf(a.vm), read?.vms)) return { w, ok: false };
      return {
        w: { ...w, vms: vms.map((v) => (nameOf(v) === nameOf(a.vm) ? settle(a.vm) : v)) },
        ok: true,
      };
    case 'deleteVm': {
      // Preconditioned on what the plan read (L7): a member changed since is left alone. A member
      // with a finalizer stays Terminating (Background propagation), one without is gone at once.
      if (stale(vms, a.name, read?.vms)) return { w, ok: false };
      const hit = (v: VirtualMachine): boolean => nameOf(v) === a.name && v.metadata.uid === a.uid;
      const held = (v: VirtualMachine): boolean => (v.metadata.finalizers ?? []).length > 0;
      const at = rfc3339(now);
      const next = vms.flatMap((v) =>
        !hit(v)
          ? [v]
          : held(v)
            ? [
                {
                  ...v,
                  metadata: {
                    ...v.metadata,
                    deletionTimestamp: v.metadata.deletionTimestamp ?? at,
                  },
                },
              ]
            : [],
      );
      return { w: { ...w, vms: next }, ok: true };
    }
    case 'createDisk':
      if (disks.some((d) => nameOf(d) === nameOf(a.disk))) return { w, ok: true };
      return { w: { ...w, disks: [...disks, createdDisk(a.disk)] }, ok: true };
    case 'claimDisk':
    case 'updateDisk':
      if (stale(disks, nameOf(a.disk), read?.disks)) return { w, ok: false };
      return {
        w: { ...w, disks: disks.map((d) => (nameOf(d) === nameOf(a.disk) ? a.disk : d)) },
        ok: true,
      };
    case 'deleteDisk':
      return { w: { ...w, disks: disks.filter((d) => nameOf(d) !== a.name) }, ok: true };
    case 'claimStatus': {
      const claims = (w.claims ?? []).map((c) =>
        c.metadata.uid === a.claim.metadata.uid ? { ...c, status: a.claim.status } : c,
      );
      return { w: { ...w, claims }, ok: true };
    }
    case 'dropTargets':
      return {
        w: {
          ...w,
          pool: withTargets(
            pool,
            recordedTargets(pool).filter((t) => !a.names.includes(t.name)),
          ),
        },
        ok: true,
      };
  }
}

/** A platform that acts at once: a VM runs unless its run policy stops it. */
function settle(vm: VirtualMachine): VirtualMachine {
  const stop = vm.spec.runPolicy === 'AlwaysOff' || vm.spec.runPolicy === 'Manual';
  const phase = vm.status?.phase;
  const next = stop
    ? phase === undefined || phase === 'Running'
      ? 'Stopped'
      : phase
    : phase === undefined || phase === 'Stopped'
      ? 'Running'
      : phase;
  return next === phase ? vm : { ...vm, status: { ...vm.status, phase: next } };
}

/** Reconciles until a plan has nothing to do (at most `passes`); returns the world and the plans. */
export function converge(
  w: World,
  now: Date,
  passes = 8,
  rand: (pass: number) => Rand = (i) => seededRandom(i + 1),
): { w: World; plans: Plan[] } {
  const plans: Plan[] = [];
  for (let i = 0; i < passes; i++) {
    const pl = plan(observedOf(w), now, rand(i));
    plans.push(pl);
    if (pl.actions.length === 0 && !pl.writeStatus) return { w, plans };
    w = apply(w, pl, now);
  }
  throw new Error('did not converge');
}

/** The world with `add` merged into one member's annotations. */
export function annotate(w: World, name: string, add: Record<string, string>): World {
  return {
    ...w,
    vms: w.vms.map((v) =>
      nameOf(v) === name
        ? { ...v, metadata: { ...v.metadata, annotations: { ...v.metadata.annotations, ...add } } }
        : v,
    ),
  };
}

/** The world after a `/scale` write: replicas set, generation bumped. */
export function scale(w: World, replicas: number): World {
  return {
    ...w,
    pool: {
      ...w.pool,
      metadata: { ...w.pool.metadata, generation: (w.pool.metadata.generation ?? 1) + 1 },
      spec: { ...w.pool.spec, replicas },
    },
  };
}
