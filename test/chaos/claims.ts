/**
 * Claims under delivery chaos: a pool with `spec.claims` beside the platform simulator, while
 * claimers create claims (some with a short ttl, Delete or Recycle), releasers delete them, the pool
 * is scaled, and storms of redundant deliveries (pool, VM, disk and claim events, resync ticks) run
 * on three reconcile-pool instances. Violations, judged from the claims and VM watches as they go:
 * a claim Bound to two members over its life, two Bound claims naming one member, two live members
 * carrying one claim's marks, a claimed member deleted but by its own release (its claim deleted or
 * expired). L1 is the observer's, against max(spec.replicas, claims.maxReplicas). Each trial ends with
 * every claim released and the pool converged to its idle buffer, no marks left.
 * @module
 */
import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { CLAIM_API_VERSION, CLAIM_GROUP, CLAIM_VERSION, keys } from '../../shared/api/index.js';
import { stormOf } from './delivery.js';
import { adminKubeConfig, chaosPool, createPool, deletePool, editPool, rng } from './kit.js';
import type { Rng } from './kit.js';
import { checkConverged, eventInit } from './laws.js';
import type { Storm } from './delivery.js';
import { deliver, settleRig, startRig, stopRig } from './rig.js';
import type { Rig } from './rig.js';

/** One trial, as measured. */
export interface ClaimTrial {
  readonly pool: string;
  readonly claims: number;
  /** Claims seen Bound, released by deletion, and expired. */
  readonly bound: number;
  readonly released: number;
  readonly expired: number;
  readonly converged: boolean;
}

/** Figures of a run. */
export interface ClaimFigures {
  readonly trials: ClaimTrial[];
  deliveries: number;
  violations: string[];
}

interface ClaimSeen {
  metadata: {
    name: string;
    uid: string;
    resourceVersion: string;
    deletionTimestamp?: string;
  };
  spec: { poolName: string };
  status?: { phase?: string; virtualMachineName?: string; expiresAt?: string };
}

const MIN_IDLE = 2;
const MAX = 8;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `trials` trials on fresh pools in one namespace. */
export async function runClaimsChaos(o: {
  readonly trials: number;
  readonly seed: number;
}): Promise<ClaimFigures> {
  const fig: ClaimFigures = { trials: [], deliveries: 0, violations: [] };
  const rig = await startRig({
    label: 'claims',
    seed: o.seed,
    burst: 8,
    instances: 3,
    simulator: {},
  });
  try {
    for (let t = 0; t < o.trials; t++) fig.trials.push(await trial(rig, `k${t}`, o.seed + t, fig));
  } catch (err: unknown) {
    fig.violations.push(`claims chaos crashed: ${String(err)}`);
  } finally {
    fig.violations.push(...(await stopRig(rig)).map((v) => `${rig.ns}: ${v}`));
  }
  return fig;
}

/** The claims of a namespace as their watch delivers them, with the laws judged on every event. */
class ClaimsWatch {
  readonly live = new Map<string, ClaimSeen>();
  /** The member each claim uid was first Bound to. */
  readonly boundTo = new Map<string, string>();
  readonly expired = new Set<string>();
  private stopWatch: (() => void) | undefined;

  private readonly say: (v: string) => void;

  constructor(say: (v: string) => void) {
    this.say = say;
  }

  async start(ns: string): Promise<void> {
    const ctl = await new Watch(adminKubeConfig()).watch(
      `/apis/${CLAIM_GROUP}/${CLAIM_VERSION}/namespaces/${ns}/virtualmachineclaims`,
      {},
      (type: string, c: ClaimSeen) => {
        this.on(type, c);
      },
      () => undefined,
    );
    this.stopWatch = () => {
      ctl.abort();
    };
  }

  stop(): void {
    this.stopWatch?.();
  }

  private on(type: string, c: ClaimSeen): void {
    const uid = c.metadata.uid;
    if (type === 'DELETED') {
      this.live.delete(uid);
      return;
    }
    this.live.set(uid, c);
    if (c.status?.phase === 'Expired') this.expired.add(uid);
    const vm = c.status?.virtualMachineName;
    if (c.status?.phase !== 'Bound' || vm === undefined) return;
    const first = this.boundTo.get(uid);
    if (first === undefined) this.boundTo.set(uid, vm);
    else if (first !== vm)
      this.say(
        `claim ${c.metadata.name} Bound to ${vm} after ${first} (rv ${c.metadata.resourceVersion})`,
      );
    for (const other of this.live.values())
      if (
        other.metadata.uid !== uid &&
        other.status?.phase === 'Bound' &&
        other.status.virtualMachineName === vm
      )
        this.say(`claims ${c.metadata.name} and ${other.metadata.name} both Bound to ${vm}`);
  }
}

async function trial(rig: Rig, pool: string, seed: number, fig: ClaimFigures): Promise<ClaimTrial> {
  const { ns, obs, direct } = rig;
  const dice = rng(seed);
  const say = (v: string): void => void fig.violations.push(`${pool}: ${v}`);
  const api = adminKubeConfig().makeApiClient(CustomObjectsApi);
  const res = {
    group: CLAIM_GROUP,
    version: CLAIM_VERSION,
    plural: 'virtualmachineclaims',
    namespace: ns,
  };
  const manifest = chaosPool(ns, pool, dice.pick(['NewestFirst', 'OldestFirst'] as const), 0) as {
    spec: Record<string, unknown>;
  };
  manifest.spec.claims = {
    minIdle: MIN_IDLE,
    maxReplicas: MAX,
    onRelease: dice.pick(['Delete', 'Recycle']),
  };
  await createPool(ns, manifest);
  if (!(await settleRig(rig, pool))) say('no convergence before the trial');
  const watch = new ClaimsWatch(say);
  await watch.start(ns);
  const released = new Set<string>();
  const before = obs.vmDeletions.length;
  let created = 0;
  let racing = true;

  const claimer = async (): Promise<void> => {
    while (racing && created < 14) {
      const name = `${pool}-c${created++}`;
      const ttl = dice.chance(0.3) ? { ttl: '2s' } : {};
      const onRelease = dice.chance(0.5) ? { onRelease: dice.pick(['Delete', 'Recycle']) } : {};
      await api.createNamespacedCustomObject({
        ...res,
        body: {
          apiVersion: CLAIM_API_VERSION,
          kind: 'VirtualMachineClaim',
          metadata: { name, namespace: ns },
          spec: { poolName: pool, holder: 'chaos', ...ttl, ...onRelease },
        },
      });
      await sleep(dice.range(100, 400));
    }
  };
  const release = async (c: ClaimSeen): Promise<void> => {
    released.add(c.metadata.uid);
    await api
      .deleteNamespacedCustomObject({ ...res, name: c.metadata.name })
      .catch(() => undefined);
  };
  const releaser = async (): Promise<void> => {
    while (racing) {
      await sleep(dice.range(200, 600));
      const mine = [...watch.live.values()].filter((c) => c.spec.poolName === pool);
      if (mine.length > 0) await release(dice.pick(mine));
    }
  };
  const scaler = async (): Promise<void> => {
    for (let i = 0; i < 2 && racing; i++) {
      await sleep(dice.range(500, 1500));
      await editPool(direct, ns, pool, (p) => {
        p.spec.replicas = dice.int(4);
        return p;
      });
    }
  };
  let sent = 0;
  const ticker = async (): Promise<void> => {
    while (racing) {
      const storm = withClaimEvents(stormOf(dice, ns, pool, obs), dice, [...watch.live.values()]);
      sent += storm.sends.length;
      await deliver(rig, dice, storm);
      await sleep(dice.range(50, 200));
    }
  };
  // Two live members never carry one claim's marks: looked at as often as the watch is read.
  const sampler = async (): Promise<void> => {
    while (racing) {
      const seen = new Map<string, string>();
      for (const vm of obs.live(pool)) {
        const uid = vm.metadata.annotations?.[keys.claimUid];
        if (uid === undefined) continue;
        const other = seen.get(uid);
        if (other !== undefined)
          say(`members ${other} and ${vm.metadata.name} both carry claim ${uid}`);
        seen.set(uid, vm.metadata.name);
      }
      await sleep(20);
    }
  };
  const running = Promise.all([claimer(), claimer(), releaser(), scaler(), ticker(), sampler()]);
  await sleep(6000);
  racing = false;
  await running;
  fig.deliveries += sent;

  // Every claim released; the pool settles to its idle buffer with no marks left.
  for (const c of [...watch.live.values()].filter((x) => x.spec.poolName === pool))
    await release(c);
  const converged = await settleRig(rig, pool);
  await obs.sync();
  const got = await direct.getPool(ns, pool);
  const replicas = got.ok ? (got.value.spec.replicas ?? 0) : 0;
  const v = await checkConverged(direct, obs, { pool, members: Math.max(replicas, MIN_IDLE) });
  for (const x of v) say(x);
  for (const vm of obs.live(pool))
    if (vm.metadata.annotations?.[keys.claimedBy] !== undefined)
      say(`member ${vm.metadata.name} still marked for ${vm.metadata.annotations[keys.claimedBy]}`);

  // A claimed member is deleted only by its own release: its claim deleted, or expired.
  for (const d of obs.vmDeletions.slice(before)) {
    if (d.pool !== pool) continue;
    const uid = d.annotations[keys.claimUid];
    if (uid === undefined || released.has(uid) || watch.expired.has(uid)) continue;
    const expiresAt = Date.parse(watch.live.get(uid)?.status?.expiresAt ?? '');
    if (!(expiresAt <= d.seen))
      say(`claimed member ${d.name} (claim ${uid}) deleted at rv ${d.rv}`);
  }
  watch.stop();
  obs.retire(pool);
  await deletePool(ns, pool);
  const expired = watch.expired.size;
  return {
    pool,
    claims: created,
    bound: watch.boundTo.size,
    released: released.size,
    expired,
    converged: converged && v.length === 0,
  };
}

/** Adds claim events (Resource mode, the claim as last seen) to a storm. */
function withClaimEvents(storm: Storm, dice: Rng, claims: readonly ClaimSeen[]): Storm {
  const sends = [...storm.sends];
  for (let i = 0; i < dice.int(3) && claims.length > 0; i++) {
    const c = dice.pick(claims);
    const data = { ...c, apiVersion: CLAIM_API_VERSION, kind: 'VirtualMachineClaim' };
    const type = `dev.knative.apiserver.resource.${dice.pick(['add', 'update'])}`;
    sends.push({ delay: dice.int(100), init: eventInit(type, data) });
  }
  return { ...storm, sends };
}
