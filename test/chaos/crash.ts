/**
 * Crash injection (L4): a function dies right after its k-th API call — for every k along each path
 * — and the events are delivered again; the pool must converge with no extra VM, no orphan and no
 * lost Retain disk.
 * @module
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import { GROUP, VERSION, keys } from '../../shared/api/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { collectDisks, reconcilePool, scaleDownWith } from '../../shared/reconcile/index.js';
import { seededRandom } from '../../local/simulator/rng.js';
import { dropNamespace, newNamespace } from '../e2e/harness.js';
import {
  Crash,
  adminKube,
  adminKubeConfig,
  chaosPool,
  crashingKube,
  createPool,
  editPool,
} from './kit.js';
import { annotateVm } from './fleet.js';
import { checkConverged, checkDeletions, expectedVictims, resync, retainDisks } from './laws.js';
import type { Expect } from './laws.js';
import { Observer, isStandbySeen } from './observer.js';
import { testLog } from '../logs.js';

/** The paths crashed at every step. */
export const PATHS = [
  'scaleUpReuse',
  'scaleDown',
  'drain',
  'scaledownwith',
  'rollout',
  'promote',
  'return',
  'heal',
  'gc',
] as const;
export type Path = (typeof PATHS)[number];

/** Figures of one path. */
export interface PathFigures {
  readonly path: Path;
  /** Crash points tried (k = 1 … calls of an uninterrupted run). */
  crashPoints: number;
  /** API calls of the path when nothing crashes. */
  calls: number;
  violations: string[];
}

const log = testLog('crash');
const LATER = 2 * 3600_000;

/** Runs every crash point of every path (every `stride`-th when > 1), paths in parallel. */
export async function runCrashInjection(seed: number, stride = 1): Promise<PathFigures[]> {
  const parallel = await Promise.all(
    PATHS.filter((p) => p !== 'gc').map((p) => crashPath(p, seed, stride)),
  );
  return [...parallel, await crashPath('gc', seed, stride)];
}

async function crashPath(path: Path, seed: number, stride: number): Promise<PathFigures> {
  const fig: PathFigures = { path, crashPoints: 0, calls: 0, violations: [] };
  const ns = await newNamespace(`crash-${path.toLowerCase()}`);
  const obs = await Observer.start(ns);
  const direct = adminKube();
  const app = buildReconcileApp({ kube: direct, log, rand: seededRandom(seed) });
  try {
    for (let k = 1; ; k += k < 8 ? 1 : stride) {
      const name = `${path.toLowerCase()}-${k}`;
      const crashed = await crashOnce(path, ns, name, k, obs, direct, app, seed, fig);
      fig.crashPoints++;
      if (!crashed) break;
    }
  } catch (err) {
    fig.violations.push(`${path}: ${String(err)}`);
  } finally {
    obs.checkDiskDeletions();
    fig.violations.push(...obs.violations);
    obs.stop();
    await dropNamespace(ns);
  }
  return fig;
}

/** One crash point; false when the path finished in fewer than k calls (the last point). */
async function crashOnce(
  path: Path,
  ns: string,
  name: string,
  k: number,
  obs: Observer,
  direct: Kube,
  app: ReturnType<typeof buildReconcileApp>,
  seed: number,
  fig: PathFigures,
): Promise<boolean> {
  const policy = 'NewestFirst';
  const say = (v: string): void => void fig.violations.push(`${path} k=${k}: ${v}`);
  const deps = (kube: Kube) => ({
    kube,
    log,
    now: () => new Date(),
    rand: seededRandom(seed + k),
    sleep: () => Promise.resolve(),
  });
  const settle = async (): Promise<void> => {
    const r = await resync(app, ns);
    if (!r.converged) say('setup did not converge');
    await obs.sync();
  };
  const standby = path === 'promote' || path === 'return' ? 2 : undefined;
  obs.holdReplicas(name, 3, standby);
  const manifest = chaosPool(ns, name, policy, path === 'promote' ? 1 : 3, 1) as {
    spec: Record<string, unknown>;
  };
  // The drain path's pool drains (for an hour: the test marks the victim drained itself).
  if (path === 'drain') manifest.spec.scaleDown = { drainTimeout: '1h' };
  // Standby paths: two stopped standby members to promote; an empty standby to return members to.
  if (path === 'promote') manifest.spec.standby = { replicas: 2, state: 'Stopped' };
  if (path === 'return') manifest.spec.standby = { replicas: 0, reuseOnScaleDown: true };
  if (path === 'heal') manifest.spec.healing = { startupTimeout: '1h' };
  await createPool(ns, manifest);
  await settle();
  const setReplicas = (n: number) =>
    editPool(direct, ns, name, (p) => {
      p.spec.replicas = n;
      return p;
    });

  // Bring the pool to the point where the crashing function starts.
  if (path === 'scaleUpReuse' || path === 'gc') {
    await setReplicas(path === 'gc' ? 0 : 1);
    await settle();
  }
  const retained = new Set(retainDisks(obs, name).map((d) => d.metadata.name));
  const start = obs.live(name);
  const deletionsBefore = obs.vmDeletions.length;
  // A protected member is never deleted; a drain pool deletes only drained (or timed-out) members.
  const drainMs = path === 'drain' ? 3600_000 : undefined;
  let expect: Expect;
  let victims = new Set<string>();
  let returned = new Set<string>();
  const c = crashingKube(direct, k);
  const done = { finished: false, answered: false };
  const run = async (f: () => Promise<unknown>): Promise<void> => {
    try {
      await f();
      done.finished = true;
    } catch (err) {
      if (!(err instanceof Crash)) throw err;
    }
  };
  switch (path) {
    case 'scaleUpReuse':
      await setReplicas(3);
      await run(() => reconcilePool(deps(c.kube), ns, name));
      expect = { pool: name, members: 3, retained, retainCount: 3 };
      break;
    case 'scaleDown': {
      // Fleet control on: the newest member protected, the oldest the cheapest.
      const [oldest, , newest] = [...start].sort((a, b) =>
        a.metadata.creationTimestamp < b.metadata.creationTimestamp ? -1 : 1,
      );
      await annotateVm(direct, ns, newest!.metadata.name, keys.protected, 'true');
      await annotateVm(direct, ns, oldest!.metadata.name, keys.deletionCost, '-5');
      await obs.sync();
      await setReplicas(1);
      obs.holdReplicas(name, 3);
      victims = expectedVictims(obs.live(name), policy, 2);
      await run(() => reconcilePool(deps(c.kube), ns, name));
      expect = { pool: name, members: 1, retained, retainCount: 3, held: 0 };
      break;
    }
    case 'drain': {
      // Scale down by one: the victim is recorded, asked to drain, marked drained, then deleted —
      // with a crash after any of those calls.
      await setReplicas(2);
      victims = expectedVictims(start, policy, 1);
      const drained = async (kube: Kube): Promise<void> => {
        const vms = await kube.listVms(ns, `${keys.pool}=${name}`);
        if (!vms.ok) return;
        for (const v of vms.value)
          if (v.metadata.annotations?.[keys.drainRequested] !== undefined)
            await annotateVm(kube, ns, v.metadata.name ?? '', keys.drained, 'true');
      };
      await run(async () => {
        await reconcilePool(deps(c.kube), ns, name);
        await drained(c.kube);
        await reconcilePool(deps(c.kube), ns, name);
      });
      // The agent marks it drained whenever it sees the request (here: after the redelivery).
      await resync(app, ns);
      await drained(direct);
      expect = { pool: name, members: 2, retained, retainCount: 3 };
      break;
    }
    case 'scaledownwith': {
      const targets = start.slice(0, 2).map((m) => m.metadata.name);
      victims = new Set(targets);
      await run(async () => {
        const s = await scaleDownWith(c.kube, ns, name, { targets: [...targets, targets[0]!] });
        done.answered = true;
        if (s.code !== 201) say(`scaledownwith answered ${s.code} ${s.message}`);
        await reconcilePool(deps(c.kube), ns, name);
      });
      // The caller got no answer: it retries; the targets are recorded by uid, so no double removal.
      if (!done.answered) {
        const s = await scaleDownWith(direct, ns, name, { targets });
        if (s.code !== 201) say(`retried scaledownwith answered ${s.code} ${s.message}`);
      }
      expect = { pool: name, members: 1, retained, retainCount: 3 };
      break;
    }
    case 'rollout':
      await editPool(direct, ns, name, (p) => {
        const t = p.spec.virtualMachineTemplate;
        t.metadata = { ...t.metadata, labels: { ...t.metadata?.labels, rev: String(k) } };
        if (t.spec) t.spec.cpu = { cores: 2 };
        return p;
      });
      await run(() => reconcilePool(deps(c.kube), ns, name));
      expect = { pool: name, members: 3, retained, retainCount: 3 };
      break;
    case 'promote':
      // 1 replica + 2 standby → 3 replicas: both promoted (no replica created), 2 standby created.
      await setReplicas(3);
      await run(() => reconcilePool(deps(c.kube), ns, name));
      expect = { pool: name, members: 3, standby: 2, retained, retainCount: 5 };
      break;
    case 'return': {
      // 3 replicas → 1 while the standby asks for 2: the two victims return to it, none deleted.
      await editPool(direct, ns, name, (p) => {
        p.spec.replicas = 1;
        p.spec.standby = { replicas: 2, state: 'Stopped', reuseOnScaleDown: true };
        return p;
      });
      returned = expectedVictims(start, policy, 2);
      await run(() => reconcilePool(deps(c.kube), ns, name));
      expect = { pool: name, members: 1, standby: 2, retained, retainCount: 3 };
      break;
    }
    case 'heal': {
      // One member started two hours ago and never came up: replaced under a fresh name.
      const stuck = start[0]!;
      await setStatus(ns, stuck.metadata.name, {
        phase: 'Starting',
        stats: {
          phasesTransitions: [
            { phase: 'Running', timestamp: new Date(Date.now() - 3 * 3600_000).toISOString() },
            { phase: 'Starting', timestamp: new Date(Date.now() - 2 * 3600_000).toISOString() },
          ],
        },
      });
      // The others run (no platform here says so): healing's budget (25% with healing set) counts a
      // member not Running as unavailable, and would wait for them instead of replacing.
      for (const m of start.slice(1)) await setStatus(ns, m.metadata.name, { phase: 'Running' });
      victims = new Set([stuck.metadata.name]);
      await run(() => reconcilePool(deps(c.kube), ns, name));
      expect = { pool: name, members: 3, retained, retainCount: 3 };
      break;
    }
    case 'gc': {
      const free = retainDisks(obs, name).sort((a, b) => {
        const x = a.metadata.annotations?.[keys.freeSince] ?? '';
        const y = b.metadata.annotations?.[keys.freeSince] ?? '';
        return x !== y ? (x < y ? 1 : -1) : a.metadata.name < b.metadata.name ? -1 : 1;
      });
      const warm = new Set(free.slice(0, 1).map((d) => d.metadata.name));
      const later = new Date(Date.now() + LATER);
      // GC is cluster-wide: this path runs alone, after the others (see runCrashInjection).
      await run(() => collectDisks(c.kube, later, log));
      const again = await collectDisks(direct, later, log);
      if (again.kind !== 'done') say(`GC replay: ${again.reason}`);
      expect = { pool: name, members: 0, retained: warm, retainCount: 1 };
      break;
    }
  }
  if (done.finished) fig.calls = c.calls();

  // Redelivery: the resync tick (and any event) reconciles again with a healthy function.
  const r = await resync(app, ns);
  if (!r.converged) say(`no convergence after ${r.ticks} ticks`);
  await obs.sync();
  obs.checkDiskDeletions();
  for (const v of await checkConverged(direct, obs, expect)) say(v);
  const ours = obs.vmDeletions.slice(deletionsBefore).filter((d) => d.pool === name);
  for (const v of checkDeletions(ours, drainMs)) say(v);
  const removed = new Set(ours.map((d) => d.name));
  if (removed.size !== victims.size || [...removed].some((n) => !victims.has(n)))
    say(`L2: removed [${[...removed].join(',')}] expected [${[...victims].join(',')}]`);
  // Creates: no member beyond the expected ones ever existed after the crash (a promotion creates
  // only the refill, a replacement one member).
  const created = new Map<Path, number>([
    ['rollout', 0],
    ['scaleDown', 0],
    ['drain', 0],
    ['scaledownwith', 0],
    ['return', 0],
    ['promote', 2],
    ['heal', 1],
  ]);
  const extra = created.get(path);
  if (extra !== undefined) {
    const names = new Set(start.map((m) => m.metadata.name));
    const fresh = [...obs.vms.values()].filter(
      (m) => m.metadata.labels?.[keys.pool] === name && !names.has(m.metadata.name),
    );
    if (fresh.length !== extra)
      say(
        `L4: ${fresh.length} VMs created, want ${extra} (${fresh.map((m) => m.metadata.name).join(',')})`,
      );
  }
  // Returned members are the ranking's victims, now standby members.
  const spares = new Set(
    obs
      .live(name)
      .filter(isStandbySeen)
      .map((m) => m.metadata.name),
  );
  if (path === 'return' && [...returned].some((n) => !spares.has(n)))
    say(`returned [${[...spares].join(',')}] expected [${[...returned].join(',')}]`);
  // Retire the pool so the next crash point starts clean (the garbage collector takes the rest).
  obs.retire(name);
  await adminKubeConfig()
    .makeApiClient(CustomObjectsApi)
    .deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'virtualmachinepools',
      namespace: ns,
      name,
    })
    .catch(() => undefined);
  return !done.finished;
}

/** Writes a VM's status as the platform would (merge patch on the status subresource). */
async function setStatus(ns: string, name: string, status: object): Promise<void> {
  await adminKubeConfig().makeApiClient(CustomObjectsApi).patchNamespacedCustomObjectStatus(
    {
      group: GROUP,
      version: VERSION,
      plural: 'virtualmachines',
      namespace: ns,
      name,
      body: { status },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}
