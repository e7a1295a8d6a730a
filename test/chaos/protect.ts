/**
 * Protection racing the reconcile: while reconcile-pool deletes members (a scale-down, a rollout
 * with a scale-down, healing of members that never start, maxMemberAge expiry), concurrent writers
 * set `protected: "true"` on live members, each with an update conditioned on the version it read
 * (as a CI runner that picks up a job does), preferring the members vmpool is about to remove.
 * Violation (L7): a member whose protection write succeeded (the stored VM not Terminating) is later
 * deleted by vmpool.
 * @module
 */
import { keys } from '../../shared/api/index.js';
import { retemplate, stormOf } from './delivery.js';
import { annotateVm, noteVm } from './fleet.js';
import { chaosPool, createPool, deletePool, editPool, rng } from './kit.js';
import type { Rng } from './kit.js';
import { checkConverged, expectedVictims, pingInit } from './laws.js';
import type { Seen } from './observer.js';
import { deliver, settleRig, startRig, stopRig } from './rig.js';
import type { Rig } from './rig.js';

/** What the reconcile is deleting for while the writers protect. */
export const RACE_KINDS = ['scale-down', 'rollout', 'healing', 'expiry'] as const;
export type RaceKind = (typeof RACE_KINDS)[number];

/** VMs the simulator never starts (the healing pools' template carries it). */
const NEVER_START = 'sim.vmpool.io/never-start';

/** One trial, as measured. */
export interface RaceTrial {
  readonly kind: RaceKind;
  readonly pool: string;
  /** Protection writes that succeeded on a member not Terminating. */
  readonly protections: number;
  /** Members vmpool deleted while the writers ran. */
  readonly deleted: number;
  /** Protected members deleted anyway (0 wanted). */
  readonly lost: number;
  /** reconcile-pool's deletes refused meanwhile (409: the object changed since its read). */
  readonly stale: number;
  /** Converged once protection was lifted (undefined: healing and expiry never rest). */
  readonly converged?: boolean;
}

/** Figures of a run. */
export interface RaceFigures {
  readonly trials: RaceTrial[];
  deliveries: number;
  violations: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `trials` trials (the kinds in turn) on pools of `size` members beside the simulator. */
export async function runProtectionRace(o: {
  readonly trials: number;
  readonly seed: number;
  readonly size?: number;
}): Promise<RaceFigures> {
  const fig: RaceFigures = { trials: [], deliveries: 0, violations: [] };
  const rig = await startRig({
    label: 'protect',
    seed: o.seed,
    burst: 8,
    instances: 3,
    simulator: { neverStart: { label: `${NEVER_START}=true` } },
  });
  try {
    for (let t = 0; t < o.trials; t++) {
      const kind = RACE_KINDS[t % RACE_KINDS.length]!;
      fig.trials.push(await trial(rig, kind, `g${t}`, o.seed + t, o.size ?? 12, fig));
    }
  } catch (err: unknown) {
    fig.violations.push(`protection race crashed: ${String(err)}`);
  } finally {
    fig.violations.push(...(await stopRig(rig)).map((v) => `${rig.ns}: ${v}`));
  }
  return fig;
}

type Manifest = {
  spec: Record<string, unknown> & {
    virtualMachineTemplate: { metadata: { labels: Record<string, string> }; spec: object };
  };
};

async function trial(
  rig: Rig,
  kind: RaceKind,
  pool: string,
  seed: number,
  size: number,
  fig: RaceFigures,
): Promise<RaceTrial> {
  const { ns, obs, direct } = rig;
  const dice = rng(seed);
  const say = (v: string): void => void fig.violations.push(`${pool} (${kind}): ${v}`);
  const policy = dice.pick(['NewestFirst', 'OldestFirst'] as const);
  const m = chaosPool(ns, pool, policy, size) as Manifest;
  const template = m.spec.virtualMachineTemplate;
  Object.assign(template.spec, { disruptions: { restartApprovalMode: 'Automatic' } });
  if (kind !== 'scale-down') m.spec.rollout = { maxUnavailable: 2 };
  if (kind === 'expiry') m.spec.maxMemberAge = '4s';
  if (kind === 'healing') {
    // Every member is unhealthy: a circuit breaker allowed to trip would leave nothing to race.
    m.spec.healing = { startupTimeout: '2s', maxUnhealthy: '100%' };
    template.metadata.labels[NEVER_START] = 'true';
  }
  await createPool(ns, m);
  // Healing and expiry pools never rest: wait for their members instead of a settle.
  if (kind === 'scale-down' || kind === 'rollout') {
    if (!(await settleRig(rig, pool))) say('no convergence before the trial');
  } else
    for (let i = 0; i < 300 && obs.live(pool).length < size; i++) {
      await dice.pick(rig.apps).request('/', pingInit(ns));
      await sleep(100);
    }
  await obs.sync();
  const before = obs.vmDeletions.length;
  const conflicts = (): number => rig.kube.counts()['delete:conflict'] ?? 0;
  const staleBefore = conflicts();
  const next = kind === 'scale-down' ? dice.range(0, 3) : dice.range(1, size - 2);

  const protectedAt = new Map<string, { name: string; rv: number }>();
  let racing = true;
  const writer = async (): Promise<void> => {
    while (racing) {
      const open = obs.live(pool).filter((v) => !protectedAt.has(v.metadata.uid));
      if (protectedAt.size < size / 2 && open.length > 0) {
        const target = likelyVictim(kind, open, policy, next, dice);
        const got = await noteVm(direct, ns, target, keys.protected, 'true');
        if (got !== undefined && got.metadata.deletionTimestamp === undefined)
          protectedAt.set(got.metadata.uid ?? '', {
            name: target,
            rv: Number(got.metadata.resourceVersion),
          });
      }
      await sleep(dice.int(25));
    }
  };
  // Redundant deliveries throughout (the ApiServerSource and PingSource), on every instance.
  let sent = 0;
  const ticker = async (): Promise<void> => {
    while (racing) {
      const storm = stormOf(dice, ns, pool, obs);
      sent += storm.sends.length;
      await deliver(rig, dice, storm);
      await sleep(dice.range(50, 200));
    }
  };
  const mutate = async (): Promise<void> => {
    await sleep(dice.int(150));
    if (kind === 'scale-down' || kind === 'rollout')
      await editPool(direct, ns, pool, (p) => {
        p.spec.replicas = next;
        return kind === 'rollout' ? retemplate(p, 2 + 2 * dice.int(3)) : p;
      });
  };
  const window = { 'scale-down': 2500, rollout: 4000, healing: 6000, expiry: 7000 }[kind];
  const running = Promise.all([writer(), writer(), writer(), ticker(), mutate()]);
  await sleep(window);
  racing = false;
  await running;
  const stale = conflicts() - staleBefore;
  fig.deliveries += sent;
  await obs.sync();

  const deletions = obs.vmDeletions.slice(before).filter((d) => d.pool === pool);
  let lost = 0;
  for (const d of deletions) {
    const p = protectedAt.get(d.uid);
    if (p === undefined) continue;
    lost++;
    say(`member ${d.name} protected at rv ${p.rv} (write succeeded) deleted at rv ${d.rv}`);
  }
  let converged: boolean | undefined;
  if (kind === 'scale-down' || kind === 'rollout') {
    // Protection lifted: the pool converges to its replicas.
    for (const { name } of protectedAt.values())
      await annotateVm(direct, ns, name, keys.protected, undefined);
    converged = await settleRig(rig, pool);
    await obs.sync();
    const v = await checkConverged(direct, obs, { pool, members: next });
    for (const x of v) say(x);
    converged &&= v.length === 0;
  }
  obs.retire(pool);
  await deletePool(ns, pool);
  const protections = protectedAt.size;
  return { kind, pool, protections, deleted: deletions.length, lost, stale, converged };
}

/**
 * Whom a runner protects: most often a member vmpool is about to remove (the scale-down's victims,
 * a member not Running under healing, the oldest under expiry), else any live member.
 */
function likelyVictim(
  kind: RaceKind,
  open: readonly Seen[],
  policy: string,
  next: number,
  dice: Rng,
): string {
  let likely: Seen[] = [];
  if (dice.chance(0.7)) {
    if (kind === 'scale-down' || kind === 'rollout')
      likely = open.filter((v) =>
        expectedVictims(open, policy, open.length - next).has(v.metadata.name),
      );
    else if (kind === 'healing') likely = open.filter((v) => v.status?.phase !== 'Running');
    else
      likely = [...open]
        .sort((a, b) => (a.metadata.creationTimestamp < b.metadata.creationTimestamp ? -1 : 1))
        .slice(0, 2);
  }
  return dice.pick(likely.length > 0 ? likely : open).metadata.name;
}
