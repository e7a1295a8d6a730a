/**
 * The Retain disk of one member and template, and the ledger binding fills while it walks the
 * members: the recorded binding first, then the best free disk of the template, else a new one.
 * @module
 */
import type { Binding, DiskTemplate, VirtualDisk } from '../../api/index.js';
import { keys } from '../../api/index.js';
import type { ClaimDisk, CreateDisk, View } from '../plan/index.js';
import { nameOf } from '../fleet/index.js';
import type { Rand } from '../formats/index.js';
import { retainDiskName } from '../formats/index.js';
import {
  growthOf,
  newDisk,
  poolOwned,
  rankFree,
  reusable,
  stampFree,
  templateOfDisk,
  withSize,
} from './disks.js';

/** What choosing a Retain disk reads of the plan's view. */
export type RetainInput = Pick<View, 'pool' | 'disks' | 'diskByName' | 'busy'>;

/** What binding accumulates while it walks the members; local to one bindDisks call. */
export interface Ledger {
  readonly bindings: Binding[];
  /** The first of `bindings` per member and template ({@link bindingKey}). */
  readonly bound: Map<string, Binding>;
  /** Members a binding was added for while walking (their slots may have changed). */
  readonly boundFor: Set<string>;
  readonly claimed: Set<string>;
  readonly claims: ClaimDisk[];
  readonly retainCreates: CreateDisk[];
  readonly deleteCreates: CreateDisk[];
  /** Free disks of each template in the order they are taken, ranked on first use. */
  readonly free: Map<string, { readonly ranked: readonly VirtualDisk[]; next: number }>;
}

const bindingKey = (vm: string, template: string): string => `${vm}\u0000${template}`;

/** Adds a binding; the first one per member and template is the one looked up. */
export function record(ledger: Ledger, b: Binding): void {
  ledger.bindings.push(b);
  const key = bindingKey(b.vm, b.template);
  if (!ledger.bound.has(key)) ledger.bound.set(key, b);
}

/** The Retain disk for (vm, template): the recorded binding, a free disk, or a new one. */
export function bindRetain(
  view: RetainInput,
  ledger: Ledger,
  vm: string,
  t: DiskTemplate,
  rand: Rand,
): string {
  const recorded = ledger.bound.get(bindingKey(vm, t.name));
  if (recorded !== undefined) {
    const disk = view.diskByName.get(recorded.disk);
    if (disk === undefined) createRetain(view, ledger, recorded.disk, t);
    else if (disk.metadata.annotations?.[keys.freeSince] !== undefined)
      claim(view, ledger, disk, vm);
    return recorded.disk;
  }
  const free = takeFree(view, ledger, t.name);
  let name: string;
  if (free !== undefined) {
    name = nameOf(free);
    claim(view, ledger, free, vm);
  } else {
    name = retainDiskName(nameOf(view.pool), t.name, rand);
    for (let i = 0; (view.diskByName.has(name) || ledger.claimed.has(name)) && i < 32; i++)
      name = retainDiskName(nameOf(view.pool), t.name, rand);
    createRetain(view, ledger, name, t);
  }
  ledger.claimed.add(name);
  record(ledger, { vm, template: t.name, disk: name });
  ledger.boundFor.add(vm);
  return name;
}

/**
 * The best free disk of a template not claimed yet ({@link rankFree}'s order), never one in use (a
 * VM outside the pool or a Terminating member references it, or the platform reports it attached):
 * the pool's disks of
 * the template are ranked once per plan, and since claims only accumulate, each is skipped at most once.
 */
function takeFree(view: RetainInput, ledger: Ledger, template: string): VirtualDisk | undefined {
  let free = ledger.free.get(template);
  if (free === undefined) {
    const candidates = view.disks.filter(
      (d) =>
        poolOwned(view.pool, d) &&
        d.metadata.labels?.[keys.diskTemplate] === template &&
        reusable(d) &&
        !view.busy.has(nameOf(d)),
    );
    free = { ranked: rankFree(candidates), next: 0 };
    ledger.free.set(template, free);
  }
  for (; free.next < free.ranked.length; free.next++) {
    const d = free.ranked[free.next] as VirtualDisk;
    if (!ledger.claimed.has(nameOf(d))) return d;
  }
  return undefined;
}

/** A new Retain disk owned by the pool (it outlives the member it is made for). */
export function createRetain(
  view: RetainInput,
  ledger: Ledger,
  name: string,
  t: DiskTemplate,
): void {
  const owner = {
    kind: 'VirtualMachinePool',
    name: nameOf(view.pool),
    uid: view.pool.metadata.uid ?? '',
  } as const;
  ledger.retainCreates.push({ kind: 'createDisk', disk: newDisk(view.pool, t, name, owner) });
}

/**
 * Takes a free disk: free-since cleared (under its resourceVersion, so a racing GC delete fails) and,
 * like any disk of the pool, grown to its template's size in the same write.
 */
function claim(view: RetainInput, ledger: Ledger, disk: VirtualDisk, vm: string): void {
  const template = templateOfDisk(view.pool, disk);
  const size = template === undefined ? undefined : growthOf(template, disk);
  const next = stampFree(disk, undefined);
  ledger.claims.push(
    size === undefined
      ? { kind: 'claimDisk', disk: next, forVm: vm }
      : { kind: 'claimDisk', disk: withSize(next, size), forVm: vm, grownTo: size },
  );
}
