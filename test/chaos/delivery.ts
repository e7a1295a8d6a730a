/**
 * Delivery chaos: seeded storms of duplicated, reordered, delayed and dropped CloudEvents delivered
 * concurrently to reconcile-pool for the same pool, while the pool is scaled up and down, members are
 * deleted, scaledownwith is called, templates are edited and GC ticks run. A watch observer checks
 * L1-L3 throughout; each trial ends with a resync, convergence checks, L2 and L5.
 * @module
 */
import { inject } from 'vitest';
import { buildGcApp } from '../../functions/disk-gc-tick/app.js';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import {
  DEFAULT_SENDER_AUDIENCE,
  SENDER_TOKEN_EXTENSION,
  buildScaleDownEventsApp,
} from '../../functions/scale-down-with/events.js';
import {
  API_VERSION,
  AWAITING_RESTART,
  PING,
  SCALE_DOWN_WITH_EVENT,
  keys,
} from '../../shared/api/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { seededRandom } from '../../local/simulator/rng.js';
import { startSimulator } from '../../local/simulator/simulator.js';
import {
  SENDER_AUDIENCE,
  adminKube,
  chaosPool,
  createPool,
  editPool,
  rng,
  senderToken,
  writesBetween,
} from './kit.js';
import type { Rng } from './kit.js';
import {
  checkConverged,
  checkDeletions,
  eventInit,
  expectedVictims,
  pingInit,
  quiescent,
  resync,
  retainDisks,
} from './laws.js';
import { CHAOS_COSTS, annotateVm, drainAgent, featuresOf, withNote } from './fleet.js';
import { Observer, isStandbySeen } from './observer.js';
import { functionKube } from '../e2e/harness.js';
import type { FunctionName } from '../e2e/rbac.js';
import type { Seen } from './observer.js';
import { testLog } from '../logs.js';
import { dropNamespace, newNamespace } from '../e2e/harness.js';

/** Options of a delivery-chaos run. */
export interface DeliveryOptions {
  readonly trials: number;
  /** Pools driven in parallel, each in its own namespace (default 4). */
  readonly pools?: number;
  readonly seed: number;
  /** The Kube the functions use (default: straight to the API server). */
  readonly kubeFor?: (worker: number) => Kube;
  /** Namespace prefix. */
  readonly label?: string;
  /** Collect every log line of the functions (at trace level) here. */
  readonly logLines?: string[];
  /**
   * Odd-numbered pools run beside the platform simulator: VMs go Pending → Running, their
   * observedGeneration lags, and a deleted VM stays Terminating for a while behind a finalizer.
   */
  readonly platform?: boolean;
}

/** Figures of a run. */
export interface DeliveryFigures {
  trials: number;
  deliveries: number;
  dropped: number;
  duplicated: number;
  maxConcurrent: number;
  resyncTicks: number;
  /** Pools run beside the platform simulator, and VMs seen Terminating there. */
  simulatedPools: number;
  terminatingSeen: number;
  platformWaitMs: number;
  platformRounds: number;
  replies: Record<string, number>;
  mutations: Record<string, number>;
  /** Fleet control seen: members deleted after a drain (drained or timed out), surplus held. */
  fleet: Record<string, number>;
  watchEvents: number;
  /** Creates and promotions judged against the desire at their revision (L1 at each instant). */
  desireChecks: number;
  violations: string[];
}

const POLICIES = ['NewestFirst', 'OldestFirst', 'Explicit', 'NewestFirst'] as const;
const MUTATIONS = [
  'scale',
  'scale',
  'deleteVm',
  'scaledownwith',
  'template',
  'scale+template',
  'gc',
  'none',
  // Fleet control and lifecycle, on the pools that switch them on (see featuresOf): the standby
  // (and replicas) changed in one write, a scale while paused.
  'protect',
  'cost',
  'standby',
  'standby',
  'pause',
] as const;
type Mutation = (typeof MUTATIONS)[number];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The simulated platform is at rest for a pool: no member Terminating, every member Running with its
 * spec observed, and every disk of the pool Ready.
 */
export async function platformSettled(kube: Kube, ns: string, pool: string): Promise<boolean> {
  const [vms, disks] = await Promise.all([
    kube.listVms(ns, `${keys.pool}=${pool}`),
    kube.listDisks(ns, `${keys.pool}=${pool}`),
  ]);
  if (!vms.ok || !disks.ok) return false;
  return (
    vms.value.every(
      (v) =>
        v.metadata.deletionTimestamp === undefined &&
        v.status?.phase === (v.spec.runPolicy === 'AlwaysOff' ? 'Stopped' : 'Running') &&
        v.status.observedGeneration === v.metadata.generation &&
        // An approved restart is still to come.
        !(v.status.conditions ?? []).some(
          (c) => c.type === AWAITING_RESTART && c.status === 'True',
        ),
    ) &&
    disks.value.every(
      (d) => d.metadata.deletionTimestamp !== undefined || d.status?.phase === 'Ready',
    ) &&
    // The platform reports a disk attached until the VM that had it is gone: a disk it still lists
    // for a VM no longer there is platform state yet to settle, not vmpool's.
    disks.value.every((d) =>
      (d.status?.attachedToVirtualMachines ?? []).every((a) =>
        vms.value.some(
          (v) => v.metadata.name === a.name && v.metadata.deletionTimestamp === undefined,
        ),
      ),
    )
  );
}

/** Runs `opts.trials` trials spread over the pools; returns the figures. */
export async function runDeliveryChaos(opts: DeliveryOptions): Promise<DeliveryFigures> {
  const pools = opts.pools ?? 4;
  const figures: DeliveryFigures = {
    trials: 0,
    deliveries: 0,
    dropped: 0,
    duplicated: 0,
    maxConcurrent: 0,
    resyncTicks: 0,
    simulatedPools: 0,
    terminatingSeen: 0,
    platformWaitMs: 0,
    platformRounds: 0,
    replies: {},
    mutations: {},
    fleet: {},
    watchEvents: 0,
    desireChecks: 0,
    violations: [],
  };
  const perWorker = Array.from(
    { length: pools },
    (_, w) => Math.floor(opts.trials / pools) + (w < opts.trials % pools ? 1 : 0),
  );
  await Promise.all(
    perWorker.map((n, w) =>
      worker(w, n, opts, figures).catch((err: unknown) => {
        figures.violations.push(`worker ${w} crashed: ${String(err)}`);
      }),
    ),
  );
  return figures;
}

async function worker(
  w: number,
  trials: number,
  opts: DeliveryOptions,
  fig: DeliveryFigures,
): Promise<void> {
  const dice = rng(opts.seed * 31 + w);
  const ns = await newNamespace(`${opts.label ?? 'chaos'}-${w}`);
  const obs = await Observer.start(ns);
  const direct = adminKube();
  // Each function as its own ServiceAccount (knative/base RBAC), unless the fault proxy stands in.
  const own = async (name: FunctionName): Promise<Kube> =>
    opts.kubeFor?.(w) ?? (await functionKube(name, { reportingInstance: 'vmpool-chaos' }));
  const kube = await own('reconcile-pool');
  const log = testLog(`chaos-${w}`, 'silent', opts.logLines);
  const app = buildReconcileApp({ kube, log, rand: seededRandom(opts.seed * 7 + w) });
  const sdw = buildScaleDownEventsApp({
    kube: await own('scale-down-with'),
    log,
    audience: SENDER_AUDIENCE,
  });
  // The broker's delivery of a sender's event: an OIDC token for the function's audience; and the
  // sender's own token in the event (here the same ServiceAccount plays both).
  const authorization = await senderToken(ns);
  const carried = (await senderToken(ns, 'chaos-sender', DEFAULT_SENDER_AUDIENCE)).slice(7);
  const sdwEvent = (data: unknown, id: string): RequestInit => {
    const init = eventInit(SCALE_DOWN_WITH_EVENT, data, id);
    const headers = { ...(init.headers as Record<string, string>), authorization };
    return { ...init, headers: { ...headers, [`ce-${SENDER_TOKEN_EXTENSION}`]: carried } };
  };
  const later = (): Date => new Date(Date.now() + 2 * 3600_000);
  const gc = buildGcApp({ kube: await own('disk-gc-tick'), log, now: later });
  const sim =
    opts.platform === true && w % 2 === 1
      ? startSimulator({
          kubeconfigPath: inject('cluster').kubeconfigPath,
          namespace: ns,
          seed: opts.seed + w,
          jitter: 0.5,
          nodes: ['n1', 'n2', 'n3'],
          delays: {
            diskReady: 50,
            vmPending: 50,
            vmStarting: 100,
            vmStopping: 50,
            vmTerminating: 250,
          },
        })
      : undefined;
  if (sim !== undefined) fig.simulatedPools++;
  const features = featuresOf(w);
  const decided = new Map<string, boolean>();
  /**
   * Resync until vmpool converges, every drain has ended (the agent marks some drained, the rest time
   * out) and, beside the simulator, the platform has settled too.
   */
  const settle = async (): Promise<{ ticks: number; converged: boolean }> => {
    const t0 = performance.now();
    let ticks = 0;
    for (let round = 0; round < 100; round++) {
      const r = await resync(app, ns);
      ticks += r.ticks;
      if (!r.converged) return { ticks, converged: false };
      const draining = await drainAgent(direct, ns, name, dice, decided);
      if (draining === 0 && (sim === undefined || (await platformSettled(direct, ns, name)))) {
        // Settled only when one more pass finds nothing to write: it may take the next rollout step.
        const before = kube.counts();
        const last = await resync(app, ns);
        ticks += last.ticks;
        if (last.converged && writesBetween(before, kube.counts()) === 0) {
          if (sim !== undefined) fig.platformWaitMs += performance.now() - t0;
          return { ticks, converged: true };
        }
      }
      fig.platformRounds++;
      await sleep(100);
    }
    return { ticks, converged: false };
  };
  const policy = POLICIES[w % POLICIES.length]!;
  const name = `p${w}`;
  let replicas = 2;
  let standby = features.standby === undefined ? undefined : 1;
  let rev = 0;
  const bump = (k: string, m: Record<string, number>): void => {
    m[k] = (m[k] ?? 0) + 1;
  };
  try {
    obs.holdReplicas(name, replicas, standby);
    if (features.budget !== undefined) obs.budget(name, features.budget);
    const spec = chaosPool(ns, name, policy, replicas) as {
      spec: { virtualMachineTemplate: { spec: Record<string, unknown> } };
    };
    // Beside the simulator a spec change needs a restart: approve it, so a rollout completes.
    if (sim !== undefined)
      spec.spec.virtualMachineTemplate.spec.disruptions = { restartApprovalMode: 'Automatic' };
    if (features.drainTimeout !== undefined)
      Object.assign(spec.spec, { scaleDown: { drainTimeout: features.drainTimeout } });
    if (features.standby !== undefined)
      Object.assign(spec.spec, { standby: { replicas: standby, ...features.standby } });
    if (features.budget !== undefined)
      Object.assign(spec.spec, { rollout: { maxUnavailable: features.budget } });
    await createPool(ns, spec);
    await settle();
    for (let t = 0; t < trials; t++) {
      const tag = `${ns}/${name} trial ${t}`;
      await obs.sync();
      // Replicas and standby members apart: the ranking, targets and L2 are about the replicas.
      const everyone = obs.live(name);
      const start = everyone.filter((m) => !isStandbySeen(m));
      const spares = everyone.length - start.length;
      const before = obs.vmDeletions.length;
      const freeBefore = retainDisks(obs, name).filter(
        (d) => d.metadata.annotations?.[keys.freeSince] !== undefined,
      );
      let mutation: Mutation = dice.pick(MUTATIONS);
      if ((mutation === 'deleteVm' || mutation === 'scaledownwith') && start.length === 0)
        mutation = 'scale';
      if (
        (mutation === 'protect' && !features.protection) ||
        (mutation === 'cost' && !features.costs)
      )
        mutation = 'none';
      if ((mutation === 'protect' || mutation === 'cost') && start.length === 0) mutation = 'none';
      if (
        (mutation === 'standby' && standby === undefined) ||
        (mutation === 'pause' && features.pause !== true)
      )
        mutation = 'none';
      bump(mutation, fig.mutations);
      let expected = new Set<string>();
      let userDeleted: string | undefined;
      let hold = replicas;
      let next = replicas;
      let nextStandby = standby;
      // The members as the mutation leaves them (a protection toggled, a cost set).
      let after: Seen[] = start;
      const note = fleetNote(mutation, start, dice);
      if (note !== undefined) after = withNote(start, note.name, note.key, note.value);
      if (mutation === 'scale' || mutation === 'scale+template' || mutation === 'pause') {
        do next = dice.range(0, 4);
        while (next === replicas);
        hold = Math.max(replicas, next);
      }
      if (mutation === 'standby') {
        // A new standby size, now and then with a scale-down in the same write: while the standby
        // is short, a reuse pool takes the victims back instead of deleting them.
        nextStandby = dice.range(0, 2);
        if (policy !== 'Explicit' && dice.chance(0.5)) next = dice.range(0, replicas);
        hold = Math.max(replicas, next);
      }
      // A surplus (a scale-down, or one protection held until this toggle) goes by the ranking.
      if (mutation !== 'scaledownwith' && mutation !== 'deleteVm' && start.length > next)
        expected = expectedVictims(after, policy, start.length - next);
      const guarded = (m: Seen): boolean => m.metadata.annotations?.[keys.protected] === 'true';
      let targets: string[] = [];
      let dryRun = false;
      let refused = false;
      const sdwId = `${tag}: scaledownwith`;
      if (mutation === 'scaledownwith') {
        const open = start.filter((m) => !guarded(m));
        // Now and then a protected target: refused (409, redelivered as 503), nothing changes.
        refused = open.length === 0 || (start.some(guarded) && dice.chance(0.2));
        const pool = refused ? start.filter(guarded) : open;
        const picked = dice.shuffle(pool).slice(0, dice.range(1, Math.min(2, pool.length)));
        targets = picked.map((m) => m.metadata.name);
        if (dice.chance(0.3)) targets.push(targets[0]!);
        dryRun = !refused && dice.chance(0.15);
        if (!dryRun && !refused) expected = new Set(targets);
      }
      obs.holdReplicas(
        name,
        hold,
        standby === undefined ? undefined : Math.max(standby, nextStandby ?? 0),
      );
      if (mutation === 'pause') {
        // Paused first (and seen so by a reconcile); from then on nothing of the pool may change.
        await editPool(direct, ns, name, (p) => ({ ...p, spec: { ...p.spec, paused: true } }));
        await resync(app, ns);
        await obs.sync();
        obs.freeze(name);
      }

      const storm = stormOf(dice, ns, name, obs);
      fig.dropped += storm.dropped;
      fig.duplicated += storm.duplicated;
      fig.maxConcurrent = Math.max(fig.maxConcurrent, storm.sends.length + 1);
      const act = async (): Promise<void> => {
        await sleep(dice.int(100));
        switch (mutation) {
          case 'scale':
          case 'scale+template':
          case 'pause':
            await editPool(direct, ns, name, (p) => {
              p.spec.replicas = next;
              if (mutation === 'scale+template') retemplate(p, ++rev);
              return p;
            });
            replicas = next;
            break;
          case 'template':
            await editPool(direct, ns, name, (p) => retemplate(p, ++rev));
            break;
          case 'standby':
            await editPool(direct, ns, name, (p) => {
              p.spec.replicas = next;
              p.spec.standby = { ...p.spec.standby!, replicas: nextStandby ?? 0 };
              return p;
            });
            replicas = next;
            standby = nextStandby;
            break;
          case 'deleteVm': {
            const v = dice.pick(everyone);
            userDeleted = v.metadata.name;
            await direct.deleteVm(ns, v.metadata.name, { uid: v.metadata.uid });
            break;
          }
          case 'protect':
          case 'cost':
            if (note !== undefined) await annotateVm(direct, ns, note.name, note.key, note.value);
            break;
          case 'scaledownwith': {
            const body = {
              namespace: ns,
              pool: name,
              targets,
              ...(dryRun ? { dryRun: ['All'] } : {}),
            };
            if (refused) {
              const res = await sdw.request('/', sdwEvent(body, sdwId));
              bump(`scaledownwith protected ${res.status}`, fig.replies);
              if (res.status !== 503)
                fig.violations.push(`${tag}: protected target answered ${res.status}`);
              break;
            }
            // A broker redelivers 503s with the same id; the request is idempotent by its key.
            for (let i = 0; i < 20; i++) {
              const res = await sdw.request('/', sdwEvent(body, sdwId));
              bump(`scaledownwith ${res.status}`, fig.replies);
              if (res.status !== 503) {
                if (res.status !== 202)
                  fig.violations.push(
                    `${tag}: scaledownwith answered ${res.status} ${await res.text()}`,
                  );
                break;
              }
            }
            if (!dryRun) replicas = Math.max(0, replicas - new Set(targets).size);
            break;
          }
          case 'gc': {
            const res = await gc.request('/', eventInit(PING, {}));
            bump(`gc ${res.status}`, fig.replies);
            break;
          }
          case 'none':
            break;
        }
      };
      const codes = await Promise.all([
        act().then(() => 0),
        ...storm.sends.map(async (s) => {
          await sleep(s.delay);
          return (await app.request('/', s.init)).status;
        }),
      ]);
      for (const c of codes.slice(1)) bump(String(c), fig.replies);
      fig.deliveries += storm.sends.length;
      for (const c of codes.slice(1))
        if (c !== 202 && c !== 204 && c !== 503) fig.violations.push(`${tag}: reply ${c}`);

      if (mutation === 'pause') {
        obs.thaw(name);
        await editPool(direct, ns, name, (p) => ({ ...p, spec: { ...p.spec, paused: false } }));
      }
      obs.holdReplicas(name, replicas, standby);
      let r = await settle();
      fig.resyncTicks += r.ticks;
      if (!r.converged) fig.violations.push(`${tag}: no convergence after ${r.ticks} resync ticks`);
      await obs.sync();
      obs.checkDiskDeletions();

      // L2: exactly the expected replicas were deleted by vmpool (the user's own delete aside) or,
      // in a reuse pool, returned to the standby; standby members only as its surplus.
      const all = obs.vmDeletions
        .slice(before)
        .filter((d) => d.pool === name && d.name !== userDeleted);
      const ours = all.filter((d) => d.labels[keys.standby] !== 'true');
      for (const v of checkDeletions(ours, features.drainTimeoutMs))
        fig.violations.push(`${tag}: ${v}`);
      const returned = standbyNow(obs, name, start);
      if (returned.length > 0) bump('trials returning replicas to the standby', fig.fleet);
      const spareUids = new Set(everyone.filter(isStandbySeen).map((m) => m.metadata.uid));
      if (obs.live(name).some((m) => !isStandbySeen(m) && spareUids.has(m.metadata.uid)))
        bump('trials promoting standby members', fig.fleet);
      const removed = new Set([...ours.map((d) => d.name), ...returned]);
      const surplus = all.length - ours.length;
      const spareGone = mutation === 'standby' ? Math.max(0, spares - (standby ?? 0)) : 0;
      if (surplus !== spareGone)
        fig.violations.push(`${tag}: ${surplus} standby members deleted, want ${spareGone}`);
      for (const d of ours)
        if (d.annotations[keys.drainRequested] !== undefined)
          bump(
            d.annotations[keys.drained] === 'true' ? 'deleted drained' : 'deleted at drain timeout',
            fig.fleet,
          );
      const same = removed.size === expected.size && [...removed].every((n) => expected.has(n));
      if (!same)
        fig.violations.push(
          `${tag}: L2 (${mutation}, ${policy}) removed [${[...removed].sort().join(',')}] expected [${[...expected].sort().join(',')}]`,
        );

      // Protected members stay: the pool keeps max(replicas, protected) (user deletions aside).
      const protectedLeft = after.filter((m) => guarded(m) && m.metadata.name !== userDeleted);
      let members = policy === 'Explicit' ? replicas : Math.max(replicas, protectedLeft.length);
      if (policy === 'Explicit' && start.length > replicas && mutation.startsWith('scale')) {
        // Explicit never deletes anonymously; admission would have refused the decrease, so undo it.
        members = start.length;
        await editPool(direct, ns, name, (p) => {
          p.spec.replicas = start.length;
          return p;
        });
        replicas = start.length;
        obs.holdReplicas(name, replicas, standby);
        r = await settle();
        fig.resyncTicks += r.ticks;
        await obs.sync();
      }
      if (mutation === 'gc') {
        // L3: the `keep` most recently freed disks survive a GC pass (keep is 1 here).
        const warm = [...freeBefore].sort((a, b) => {
          const x = a.metadata.annotations?.[keys.freeSince] ?? '';
          const y = b.metadata.annotations?.[keys.freeSince] ?? '';
          return x !== y ? (x < y ? 1 : -1) : a.metadata.name < b.metadata.name ? -1 : 1;
        })[0];
        if (warm !== undefined && !obs.disks.has(warm.metadata.name))
          fig.violations.push(`${tag}: L3 keep: warm disk ${warm.metadata.name} collected`);
      }
      const held = members - replicas;
      if (held > 0) bump('trials ending with protected surplus held', fig.fleet);
      if (refused) bump('scaledownwith of a protected VM refused', fig.fleet);
      const expect = { pool: name, members, held, ...(standby === undefined ? {} : { standby }) };
      for (const v of await checkConverged(direct, obs, expect))
        fig.violations.push(`${tag}: ${v}`);
      if (mutation === 'scaledownwith' && !dryRun && !refused) {
        // A late redelivery (the broker lost our answer): done already, whatever became of the targets.
        // As the broker does, a 503 is delivered again (under injected faults, the sender's
        // TokenReview or SubjectAccessReview may fail like any other call).
        const body = { namespace: ns, pool: name, targets };
        let res = await sdw.request('/', sdwEvent(body, sdwId));
        bump(`scaledownwith redelivered ${res.status}`, fig.replies);
        for (let i = 0; i < 20 && res.status === 503; i++) {
          res = await sdw.request('/', sdwEvent(body, sdwId));
          bump(`scaledownwith redelivered ${res.status}`, fig.replies);
        }
        const p = await direct.getPool(ns, name);
        if (res.status !== 202 || !p.ok || p.value.spec.replicas !== replicas)
          fig.violations.push(`${tag}: redelivered scaledownwith answered ${res.status}`);
      }
      const q = await quiescent(app, kube, ns, name);
      if (q !== undefined) fig.violations.push(`${tag}: ${q}`);
      fig.trials++;
    }
  } finally {
    const restarting = obs.restartingMax.get(name);
    if (restarting !== undefined)
      fig.fleet[`most restarting at once under maxUnavailable ${String(features.budget)}`] =
        Math.max(
          fig.fleet[`most restarting at once under maxUnavailable ${String(features.budget)}`] ?? 0,
          restarting,
        );
    fig.watchEvents += obs.events;
    fig.desireChecks += obs.desire.checked;
    fig.terminatingSeen += obs.terminatingSeen;
    await sim?.stop();
    obs.checkDiskDeletions();
    fig.violations.push(...obs.violations.map((v) => `${ns}: ${v}`));
    obs.stop();
    await dropNamespace(ns);
  }
}

/** The annotation a fleet mutation sets: a protection toggled or a cost, on a random member. */
function fleetNote(
  mutation: Mutation,
  start: readonly Seen[],
  dice: Rng,
): { name: string; key: string; value: string | undefined } | undefined {
  if ((mutation !== 'protect' && mutation !== 'cost') || start.length === 0) return undefined;
  const m = dice.pick(start);
  const name = m.metadata.name;
  if (mutation === 'cost') return { name, key: keys.deletionCost, value: dice.pick(CHAOS_COSTS) };
  const on = m.metadata.annotations?.[keys.protected] === 'true';
  return { name, key: keys.protected, value: on ? undefined : 'true' };
}

/** A template edit: a label every member must receive, and a spec change on every other revision. */
export function retemplate<P extends { spec: { virtualMachineTemplate: object } }>(
  p: P,
  rev: number,
): P {
  const t = p.spec.virtualMachineTemplate as {
    metadata?: { labels?: Record<string, string> };
    spec?: { cpu?: { cores?: number } };
  };
  t.metadata = { ...t.metadata, labels: { ...t.metadata?.labels, rev: String(rev) } };
  if (rev % 2 === 0 && t.spec !== undefined) t.spec.cpu = { cores: 1 + (rev % 4) };
  return p;
}

/** The deliveries of one trial, and how many events were dropped or duplicated. */
export interface Storm {
  readonly sends: Array<{ delay: number; init: RequestInit }>;
  readonly dropped: number;
  readonly duplicated: number;
}

/**
 * The deliveries of one trial: events of every shape ApiServerSource and PingSource send (stale
 * payloads included), some dropped, some duplicated with the same id, each after a random delay.
 */
export function stormOf(dice: Rng, ns: string, pool: string, obs: Observer): Storm {
  const sends: Array<{ delay: number; init: RequestInit }> = [];
  let dropped = 0;
  let duplicated = 0;
  const n = dice.range(3, 9);
  const members = obs.members(pool);
  const disks = obs.poolDisks(pool);
  for (let i = 0; i < n; i++) {
    const kind = dice.int(7);
    const verb = dice.pick(['add', 'update', 'delete']);
    let type = `dev.knative.apiserver.ref.${verb}`;
    let data: unknown;
    const vm = members.length > 0 ? dice.pick(members) : undefined;
    const disk = disks.length > 0 ? dice.pick(disks) : undefined;
    if (kind === 0 || vm === undefined) {
      data = { apiVersion: API_VERSION, kind: 'VirtualMachinePool', name: pool, namespace: ns };
    } else if (kind === 1) {
      type = PING;
      data = { namespace: ns };
    } else if (kind === 2) {
      type = `dev.knative.apiserver.resource.${verb}`;
      data = { ...vm, apiVersion: API_VERSION, kind: 'VirtualMachine' };
    } else if (kind === 3) {
      data = {
        apiVersion: API_VERSION,
        kind: 'VirtualMachine',
        name: vm.metadata.name,
        namespace: ns,
      };
    } else if (kind === 4 && disk !== undefined) {
      type = `dev.knative.apiserver.resource.${verb}`;
      data = { ...disk, apiVersion: API_VERSION, kind: 'VirtualDisk' };
    } else if (kind === 5) {
      // A VM that never existed (or is long gone): Reference mode falls back to the namespace.
      data = {
        apiVersion: API_VERSION,
        kind: 'VirtualMachine',
        name: `${pool}-gone${i}`,
        namespace: ns,
      };
    } else {
      type = `dev.knative.apiserver.resource.${verb}`;
      data = {
        apiVersion: API_VERSION,
        kind: 'VirtualMachinePool',
        metadata: { name: pool, namespace: ns },
      };
    }
    if (dice.chance(0.15)) {
      dropped++;
      continue;
    }
    const copies = dice.chance(0.35) ? dice.range(2, 4) : 1;
    if (copies > 1) duplicated += copies - 1;
    const id = `ev-${dice.int(1e9)}`;
    for (let c = 0; c < copies; c++)
      sends.push({
        delay: dice.int(120),
        init: type === PING ? pingInit(ns) : eventInit(type, data, id),
      });
  }
  return { sends, dropped, duplicated };
}

/** Members that were replicas at the start of a trial and are standby members now. */
function standbyNow(obs: Observer, pool: string, start: readonly Seen[]): string[] {
  const was = new Set(start.map((m) => m.metadata.uid));
  return obs
    .live(pool)
    .filter((m) => isStandbySeen(m) && was.has(m.metadata.uid))
    .map((m) => m.metadata.name);
}
