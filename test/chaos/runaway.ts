/**
 * Runaway intent: a pool scaled up by a lot, and while its creates are executing the desire is
 * taken back (scaled back to 1-3, paused, or the pool deleted), with redundant deliveries racing on
 * several reconcile-pool instances before and after the change. reconcile-pool runs with a small
 * create burst so bursts show. Checked: L1 against the desire at each instant (the observer, with a
 * grace of one burst after a drop), creation stops within one burst of the change (creates counted
 * after the drop), convergence.
 * @module
 */
import { stormOf } from './delivery.js';
import { chaosPool, createPool, deletePool, editPool, rng } from './kit.js';
import { checkConverged } from './laws.js';
import { deliver, settleRig, startRig, stopRig } from './rig.js';
import type { Rig } from './rig.js';

/** How the desire is taken back. */
export const RUNAWAY_MODES = ['scale back', 'pause', 'delete'] as const;
export type RunawayMode = (typeof RUNAWAY_MODES)[number];

/** One trial, as measured. */
export interface RunawayTrial {
  readonly mode: RunawayMode;
  readonly pool: string;
  /** Members when the desire dropped (of the peak asked for). */
  readonly atDrop: number;
  /** spec.replicas after the drop (0 for a pause or a deletion). */
  readonly after: number;
  /** Creates seen after the drop, until the desire rose again. */
  readonly createsAfter: number;
  /** What the law allows: one burst, plus what the new desire still asks for. */
  readonly allowed: number;
  readonly converged: boolean;
}

/** Figures of a run. */
export interface RunawayFigures {
  readonly burst: number;
  readonly peak: number;
  readonly trials: RunawayTrial[];
  deliveries: number;
  /** Additions the observer judged against the desire at their revision, and those graced. */
  checked: number;
  graced: number;
  violations: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `trials` trials (the modes in turn), each on a fresh pool scaled to `peak`. */
export async function runRunaway(o: {
  readonly trials: number;
  readonly seed: number;
  readonly burst?: number;
  readonly peak?: number;
}): Promise<RunawayFigures> {
  const burst = o.burst ?? 8;
  const peak = o.peak ?? 60;
  const fig: RunawayFigures = {
    burst,
    peak,
    trials: [],
    deliveries: 0,
    checked: 0,
    graced: 0,
    violations: [],
  };
  const rig = await startRig({ label: 'runaway', seed: o.seed, burst, instances: 3 });
  try {
    for (let t = 0; t < o.trials; t++) {
      const r = await trial(
        rig,
        RUNAWAY_MODES[t % RUNAWAY_MODES.length]!,
        `r${t}`,
        o.seed + t,
        fig,
      );
      fig.trials.push(r);
    }
  } catch (err: unknown) {
    fig.violations.push(`runaway crashed: ${String(err)}`);
  } finally {
    fig.checked = rig.obs.desire.checked;
    fig.graced = rig.obs.desire.graced;
    fig.violations.push(...(await stopRig(rig)).map((v) => `${rig.ns}: ${v}`));
  }
  return fig;
}

async function trial(
  rig: Rig,
  mode: RunawayMode,
  pool: string,
  seed: number,
  fig: RunawayFigures,
): Promise<RunawayTrial> {
  const { ns, obs, direct } = rig;
  const dice = rng(seed);
  const say = (v: string): void => void fig.violations.push(`${pool} (${mode}): ${v}`);
  const start = dice.range(1, 2);
  await createPool(ns, chaosPool(ns, pool, 'NewestFirst', start));
  if (!(await settleRig(rig, pool))) say('no convergence before the trial');
  await obs.sync();
  const up = await editPool(direct, ns, pool, (p) => ({
    ...p,
    spec: { ...p.spec, replicas: fig.peak },
  }));
  const upRv = Number(up.metadata.resourceVersion);
  const created = (): number =>
    obs.desire.additionsAfter(pool, upRv).filter((a) => a.kind === 'create').length;
  // Take the desire back at a random point of the creates: some made, most still to come.
  const when = dice.range(1, Math.floor(fig.peak / 3));
  const after = mode === 'scale back' ? dice.range(1, 3) : 0;
  const change = async (): Promise<number[]> => {
    for (let i = 0; i < 4000 && created() < when; i++) await sleep(5);
    if (mode === 'scale back')
      await editPool(direct, ns, pool, (p) => ({ ...p, spec: { ...p.spec, replicas: after } }));
    else if (mode === 'pause')
      await editPool(direct, ns, pool, (p) => ({ ...p, spec: { ...p.spec, paused: true } }));
    else {
      obs.retire(pool);
      await deletePool(ns, pool);
    }
    return deliver(rig, dice, stormOf(dice, ns, pool, obs));
  };
  const storm = stormOf(dice, ns, pool, obs);
  const [before, later] = await Promise.all([deliver(rig, dice, storm), change()]);
  const codes = [...before, ...later];
  fig.deliveries += codes.length;
  for (const c of codes) if (c !== 202 && c !== 204 && c !== 503) say(`reply ${c}`);

  let converged = await settleRig(rig, pool);
  if (mode === 'pause') {
    const p = await direct.getPool(ns, pool);
    const intent = p.ok ? p.value.status?.intent : undefined;
    // Creates made before the pause stay recorded until a pass after it; none may be left to make
    // but those a Retain disk was recorded for (kept, L3: another reconcile may be making them;
    // a paused pool makes none of them itself).
    await obs.sync();
    const bound = new Set((intent?.bindings ?? []).map((b) => b.vm));
    const recorded = [...(intent?.creates ?? []), ...(intent?.standbyCreates ?? [])];
    const left = recorded.filter((n) => !obs.vms.has(n) && !bound.has(n));
    if (left.length > 0) say(`paused, still ${left.length} creates recorded: ${left.join(' ')}`);
    await editPool(direct, ns, pool, (q) => ({
      ...q,
      spec: { ...q.spec, paused: false, replicas: dice.range(1, 3) },
    }));
    converged = converged && (await settleRig(rig, pool));
  }
  await obs.sync();
  if (mode === 'delete') {
    // The garbage collector removes what the pool owned; vmpool must not add to it meanwhile.
    for (let i = 0; i < 600 && obs.members(pool).length > 0; i++) await sleep(100);
    converged = converged && obs.members(pool).length === 0;
    if (!converged) say(`${obs.members(pool).length} members left after the pool was deleted`);
    await obs.sync();
  } else {
    const p = await direct.getPool(ns, pool);
    const members = p.ok ? (p.value.spec.replicas ?? 0) : -1;
    const v = await checkConverged(direct, obs, { pool, members });
    for (const x of v) say(x);
    converged = converged && v.length === 0;
  }

  // The drop: the first desire below the peak after the scale-up; its window ends when it rises.
  const around = obs.desire.createsAroundDrop(pool, upRv, fig.peak, after);
  const dropRv = around.dropRv;
  if (dropRv === Number.POSITIVE_INFINITY) say('the drop of the desire was not seen');
  const atDrop = start + around.before;
  const createsAfter = around.after;
  const allowed = fig.burst + Math.max(0, after - atDrop);
  if (createsAfter > allowed)
    say(
      `${createsAfter} creates after the drop at rv ${dropRv} (${atDrop} members then, desire ${after}), at most ${allowed}`,
    );
  if (mode !== 'delete') {
    obs.retire(pool);
    await deletePool(ns, pool);
  }
  return { mode, pool, atDrop, after, createsAfter, allowed, converged };
}
