/**
 * Putting the plan's steps together: who is created, stays and leaves once the replicas, the
 * replacements and the standby have decided; the actions in execution order; the intent to record;
 * the facts status reports.
 * @module
 */
import type {
  Binding,
  ClaimBinding,
  Condition,
  HealingState,
  Intent,
  VirtualMachine,
} from '../../api/index.js';
import { keys } from '../../api/index.js';
import type { Action, UpdateVm } from './actions.js';
import { isGate } from './actions.js';
import { batchesOf } from './batches.js';
import type { ClaimsPlan } from './claims.js';
import type { DiskPlan, Roster } from '../disks/index.js';
import type { Count } from './count.js';
import { isStandby, availableAt, nameOf } from '../fleet/index.js';
import type { Leave } from './leave.js';
import type { View } from './observe.js';
import type { Split, StandbySide } from './partition.js';
import type { Replace } from './replace.js';
import type { StandbyPlan } from './standby.js';
import { standbyPhase } from './standby.js';
import type { Leaving } from './status.js';
import { diskUpdates } from './updates.js';

/**
 * Standby members a shortfall of replicas may promote, best first: on the current revision, in the
 * phase the standby keeps (ready), the oldest, then by name. Only labelled members: one whose return
 * is still on its way is not taken back in the same breath.
 */
export function promotable(
  split: Pick<
    Split<Pick<View, 'hash' | 'pool'>>,
    'active' | 'standbyDeletes' | 'standbyReplacements' | 'standbyLive'
  >,
): VirtualMachine[] {
  const { hash, pool } = split.active;
  const phase = standbyPhase(pool);
  const out = new Set([...split.standbyDeletes, ...split.standbyReplacements].map((r) => r.name));
  const key = (m: VirtualMachine): string =>
    `${m.metadata.labels?.[keys.templateHash] === hash ? 0 : 1}${m.status?.phase === phase ? 0 : 1}/${m.metadata.creationTimestamp ?? ''}/${nameOf(m)}`;
  return split.standbyLive
    .filter((m) => isStandby(m) && !out.has(nameOf(m)))
    .map((m) => ({ m, k: key(m) }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0))
    .map((x) => x.m);
}

/** What the roster puts together. */
export interface RosterInput {
  readonly count: Pick<Count, 'leaving' | 'creates' | 'staying'>;
  readonly replace: Pick<Replace, 'victims'>;
  readonly standby: Pick<StandbyPlan, 'victims' | 'creates' | 'returned' | 'staying'>;
}

/** Who disks are bound for after every decision: replicas and standby together. */
export function rosterOf(input: Readonly<RosterInput>): Roster {
  const { count, replace, standby } = input;
  const replaced = new Set(replace.victims.map((d) => nameOf(d.vm)));
  const leaving = [...count.leaving, ...replaced, ...standby.victims.map((r) => r.name)];
  return {
    creates: [...count.creates, ...standby.creates],
    standby: new Set(standby.creates),
    leaving: new Set(leaving.filter((n) => !standby.returned.has(n))),
    staying: [
      ...(replaced.size === 0
        ? count.staying
        : count.staying.filter((m) => !replaced.has(nameOf(m)))),
      ...standby.staying,
    ],
  };
}

/** The steps' outputs that become actions. */
export interface Decided {
  readonly view: Pick<View, 'busy' | 'pool' | 'poolDisks'>;
  readonly now: Date;
  readonly count: Count;
  readonly leave: Leave;
  readonly standby: StandbyPlan;
  readonly disks: DiskPlan;
  readonly updates: readonly UpdateVm[];
  readonly claims?: Pick<ClaimsPlan, 'binds' | 'releases' | 'statuses'>;
}

/**
 * The actions in execution order. Disks a VM needs exist before it; promotions come before every
 * create, so a standby refill never lands while the member it replaces still carries the label (the
 * executor stops the pass when a promotion fails); a VM's own (Delete) disks follow it. Claims are
 * bound first (a gate: nothing else runs when a binding lost its race), released beside the other
 * removals, and their statuses written last, once the members say what the statuses report.
 */
export function order(d: Decided): Action[][] {
  const { disks, leave, standby, claims } = d;
  const inUse =
    disks.claimed.size === 0 ? d.view.busy : new Set([...d.view.busy, ...disks.claimed]);
  const claimedNow = new Set(disks.claims.map((c) => nameOf(c.disk)));
  const actions: Action[] = [
    ...(claims?.binds ?? []),
    ...disks.claims,
    ...disks.retainCreates,
    ...d.updates.filter(isGate),
    ...disks.vmCreates,
    ...disks.deleteCreates,
    ...d.updates.filter((u) => !isGate(u)),
    ...leave.drainRequests,
    ...leave.deletes.filter((x) => !standby.returned.has(x.name)),
    ...standby.deletes,
    ...(claims?.releases ?? []),
    ...diskUpdates(d.view, inUse, claimedNow, d.now),
    ...disks.diskDeletes,
  ];
  if (d.count.dropTargets.length > 0)
    actions.push({ kind: 'dropTargets', names: d.count.dropTargets });
  actions.push(...(claims?.statuses ?? []));
  return batchesOf(actions);
}

/** What the intent records: the steps' decisions and what the view still has pending. */
export interface IntentInput {
  readonly view: Pick<View, 'pendingReplacements' | 'pendingPromotions'>;
  readonly count: Pick<Count, 'creates' | 'victims' | 'promotions'>;
  readonly replace: Pick<Replace, 'victims'>;
  readonly standby: Pick<StandbyPlan, 'creates' | 'returned' | 'victims' | 'returns'>;
  readonly bindings: readonly Binding[];
  /** Claims bound (or still to mark) by this plan. */
  readonly claims?: readonly ClaimBinding[];
}

/** The intent to record before any action: creates, victims, replacements, bindings, flips. */
export function intentOf(input: Readonly<IntentInput>): Intent {
  const { view, count, replace, standby, bindings, claims = [] } = input;
  return {
    creates: [...count.creates, ...standby.creates],
    standbyCreates: [...standby.creates],
    deletes: [
      ...count.victims.filter((v) => !standby.returned.has(v.name)),
      ...standby.victims,
      ...view.pendingReplacements,
      ...replace.victims.map((d) => ({
        name: nameOf(d.vm),
        uid: d.uid,
        reason: d.why === 'unhealthy' ? ('Unhealthy' as const) : ('Expired' as const),
      })),
    ],
    bindings: [...bindings],
    promotions: [...view.pendingPromotions, ...count.promotions],
    returns: [...standby.returns],
    claims: [...claims],
  };
}

/** Self-healing facts for status. */
export interface HealingFacts {
  readonly unhealthy: number;
  readonly healing?: HealingState;
  readonly condition?: Condition;
}

/** What status reports of the standby and of self-healing, for the features set up. */
export function statusFacts(
  view: Pick<View, 'pool' | 'hash'>,
  split: Pick<StandbySide, 'standby' | 'standbyLive'>,
  heal: HealingFacts,
): Pick<Leaving, 'standby' | 'healing'> {
  const { pool, hash } = view;
  const phase = standbyPhase(pool);
  const live = split.standbyLive;
  const standby = {
    replicas: split.standby.length,
    ready: live.filter((m) => m.status?.phase === phase).length,
    outdated: live.filter((m) => m.metadata.labels?.[keys.templateHash] !== hash).length,
  };
  const healing = {
    unhealthy: heal.unhealthy,
    ...(heal.healing === undefined ? {} : { state: heal.healing }),
    ...(heal.condition === undefined ? {} : { condition: heal.condition }),
  };
  return {
    ...(pool.spec.standby === undefined ? {} : { standby }),
    ...(pool.spec.healing === undefined ? {} : { healing }),
  };
}

/** When the next Running replica becomes available under minReadySeconds (ms), if one will. */
export function nextAvailable(
  split: Pick<Split<Pick<View, 'pool' | 'live'>>, 'active'>,
  now: Date,
): number | undefined {
  const ms = 1000 * (split.active.pool.spec.minReadySeconds ?? 0);
  if (ms <= 0) return undefined;
  let next: number | undefined;
  for (const m of split.active.live.values()) {
    const at = availableAt(m, ms);
    if (at !== undefined && at > now.getTime()) next = Math.min(next ?? Infinity, at);
  }
  return next;
}
