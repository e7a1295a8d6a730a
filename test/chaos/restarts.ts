/**
 * Faults of the real processes: on a control plane of its own, the real kube-apiserver (and, in a
 * second run, etcd) is killed and started again on the same ports and data in the middle of a 0→N
 * scale-up and of a scaledownwith, while the real Knative ApiServerSource adapter feeds
 * reconcile-pool and a PingSource-like tick resyncs. Checked: the pool converges (L4, nothing lost),
 * the adapter's watch resumes (a VM deleted afterwards is replaced with the ticks stopped), L1 and L3
 * on everything the API server stored, L2 for the scaledownwith, L5 at the end.
 * @module
 */
import { KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import { startPoolSources } from '../../local/controlplane/adapter.js';
import { WATCH_TRIGGER } from '../../local/controlplane/trigger.js';
import type { Adapter } from '../../local/controlplane/adapter.js';
import { startControlPlane } from '../../local/controlplane/cluster.js';
import type { ControlPlane, Restartable } from '../../local/controlplane/cluster.js';
import { serveApp } from '../../shared/http/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { createKube } from '../../shared/kube/index.js';
import { scaleDownWith } from '../../shared/reconcile/index.js';
import { testLog } from '../logs.js';
import { chaosPool, createPool, editPool } from './kit.js';
import { checkConverged, pingInit, quiescent } from './laws.js';
import { Observer } from './observer.js';

/** Figures of one component's run. */
export interface RestartFigures {
  readonly component: Restartable;
  /** Restarts the pool came through (one in the scale-up, one in the scaledownwith). */
  restarts: number;
  /** How long the component was down, each time (ms). */
  downMs: number[];
  /** Members when it was killed during the scale-up. */
  membersAtKill: number;
  /** From the component being back to the pool converged (ms): scale-up, then scaledownwith. */
  convergeMs: number[];
  /** Resync ticks sent after each restart until convergence. */
  ticksAfter: number[];
  /** reconcile-pool answers 5xx (the broker would redeliver them). */
  retried: number;
  /** Adapter deliveries after the first restart. */
  adapterEventsAfter: number;
  /** A VM deleted after the restart, with no tick: replaced from the adapter's events alone (ms). */
  watchProbeMs: number;
  /** The adapter's log when it delivered nothing for 150 s after the restart (Knative's watch back-off). */
  adapterSilent?: string;
  /** Then: the resync tick replaced the member in this long (ms). */
  healedByTickMs?: number;
  /** scaledownwith calls until one was answered 201 (a client retries a 5xx). */
  scaledownwithCalls: number;
  /** The observer's watches that ended and were resumed. */
  observerResumes: number;
  violations: string[];
}

const POOL = 'fleet';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns true; the time taken, or undefined on timeout. */
async function until(
  probe: () => Promise<boolean>,
  timeoutMs: number,
): Promise<number | undefined> {
  const t0 = performance.now();
  while (performance.now() - t0 < timeoutMs) {
    if (await probe().catch(() => false)) return Math.round(performance.now() - t0);
    await sleep(250);
  }
  return undefined;
}

/** One component's run on `cp`: a pool scaled 0→`replicas`, then `targets` named away. */
async function runOne(
  cp: ControlPlane,
  component: Restartable,
  replicas: number,
  targets: number,
): Promise<RestartFigures> {
  const fig: RestartFigures = {
    component,
    restarts: 0,
    downMs: [],
    membersAtKill: 0,
    convergeMs: [],
    ticksAfter: [],
    retried: 0,
    adapterEventsAfter: 0,
    watchProbeMs: 0,
    scaledownwithCalls: 0,
    observerResumes: 0,
    violations: [],
  };
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const ns = `restart-${component}`;
  await cp.kubectl(['create', 'namespace', ns]);
  const kube: Kube = createKube(kc, { reportingInstance: 'vmpool-chaos-restart' });
  const app = buildReconcileApp({ kube, log: testLog(`restart-${component}`) });
  let restartedAt = Number.POSITIVE_INFINITY;
  // Deliveries in flight and the end of the last one: L5 is checked once the adapter is quiet.
  let inFlight = 0;
  let lastDelivery = performance.now();
  const served = serveApp(
    {
      fetch: async (req: Request, env: never) => {
        const type = req.headers.get('ce-type') ?? '';
        if (type.startsWith('dev.knative.apiserver.') && performance.now() > restartedAt)
          fig.adapterEventsAfter++;
        inFlight++;
        try {
          const res = await app.fetch(req, env);
          if (res.status >= 500) fig.retried++;
          return res;
        } finally {
          inFlight--;
          lastDelivery = performance.now();
        }
      },
    },
    { port: 0, hostname: '127.0.0.1', handleSignals: false },
  );
  const sink = `http://127.0.0.1:${String((await served.listening).port)}/`;
  let adapters: Adapter[] = [];
  const obs = await Observer.start(ns, kc);
  let ticks = 0;
  let ticking = true;
  const tick = async (): Promise<void> => {
    if (!ticking) return;
    ticks++;
    await fetch(sink, pingInit(ns)).catch(() => undefined);
  };
  const timer = setInterval(() => void tick(), 5_000);
  const converged = async (members: number): Promise<boolean> =>
    (await checkConverged(kube, obs, { pool: POOL, members })).length === 0;
  try {
    adapters = await startPoolSources({
      kubeconfigPath: cp.kubeconfigPath,
      binDir: inject('cluster').knativeBinDir,
      sink,
      namespaces: [ns],
      name: ns,
      trigger: WATCH_TRIGGER,
    });
    await createPool(ns, chaosPool(ns, POOL, 'NewestFirst', 0), kc);
    obs.holdReplicas(POOL, replicas);
    await editPool(kube, ns, POOL, (p) => {
      p.spec.replicas = replicas;
      return p;
    });

    // 1. The component dies in the middle of the scale-up.
    const started = await until(
      () => Promise.resolve(obs.members(POOL).length >= Math.min(10, replicas / 2)),
      60_000,
    );
    if (started === undefined) fig.violations.push('the scale-up never started');
    fig.membersAtKill = obs.members(POOL).length;
    const first = await cp.restart(component);
    fig.restarts++;
    fig.downMs.push(first.downMs);
    restartedAt = performance.now();
    let before = ticks;
    const up = await until(() => converged(replicas), 180_000);
    fig.ticksAfter.push(ticks - before);
    if (up === undefined) {
      const left = await checkConverged(kube, obs, { pool: POOL, members: replicas });
      fig.violations.push(`scale-up did not converge after the restart: ${left.join('; ')}`);
    } else fig.convergeMs.push(up);

    // 2. The adapter's watch resumed: with no tick, a deleted member is replaced from its events.
    // The adapter is Knative's: if its watch stays down, vmpool's guarantee is the resync tick,
    // so the member must then be replaced once the ticks resume (L4), and the silence is reported.
    ticking = false;
    const victim = obs.live(POOL)[0];
    if (victim !== undefined) {
      await kube.deleteVm(ns, victim.metadata.name, { uid: victim.metadata.uid });
      const replaced = async (): Promise<boolean> =>
        !obs.vms.has(victim.metadata.name) &&
        obs.live(POOL).length === replicas &&
        (await converged(replicas));
      // The adapter's reflectors retry a failed watch with client-go's back-off: from 0.8 s,
      // doubling to 30 s, each wait jittered up to twice that, reset only after 2 min without a
      // failure. An API server that is down, then slow to answer, can leave one waiting most of a
      // minute before it watches again.
      const probe = await until(replaced, 150_000);
      if (probe !== undefined) fig.watchProbeMs = probe;
      else {
        fig.adapterSilent = adapters.map((a) => a.log()).join('\n');
        ticking = true;
        const healed = await until(replaced, 30_000);
        if (healed === undefined)
          fig.violations.push(
            'L4: a member deleted after the restart was replaced neither from the adapter nor by the resync tick',
          );
        else fig.healedByTickMs = healed;
      }
    }
    ticking = true;

    // 3. The component dies while a scaledownwith is under way; the client retries a 5xx.
    const names = obs
      .live(POOL)
      .map((m) => m.metadata.name)
      .sort()
      .slice(0, targets);
    const deletionsBefore = obs.vmDeletions.length;
    const call = async (): Promise<void> => {
      for (let i = 0; i < 60; i++) {
        fig.scaledownwithCalls++;
        const s = await scaleDownWith(kube, ns, POOL, { targets: names });
        if (s.code === 201) return;
        if (s.code < 500 && s.code !== 409) {
          fig.violations.push(`scaledownwith answered ${String(s.code)} ${s.message}`);
          return;
        }
        await sleep(500);
      }
      fig.violations.push('scaledownwith never succeeded');
    };
    const [second] = await Promise.all([cp.restart(component), call()]);
    fig.restarts++;
    fig.downMs.push(second.downMs);
    obs.holdReplicas(POOL, replicas - targets);
    before = ticks;
    const down = await until(() => converged(replicas - targets), 180_000);
    fig.ticksAfter.push(ticks - before);
    if (down === undefined) {
      const left = await checkConverged(kube, obs, { pool: POOL, members: replicas - targets });
      fig.violations.push(`scaledownwith did not converge after the restart: ${left.join('; ')}`);
    } else fig.convergeMs.push(down);
    // L2: exactly the named members went away.
    const gone = obs.vmDeletions
      .slice(deletionsBefore)
      .map((d) => d.name)
      .sort();
    if (JSON.stringify(gone) !== JSON.stringify(names))
      fig.violations.push(`L2: deleted ${gone.join(',')}, named ${names.join(',')}`);
    // L5: nothing to do means no write — at rest: the garbage collector has removed the Delete
    // disks of the members scaledownwith took (after a kube-apiserver restart it catches up late),
    // and the adapter has delivered what that changed. Else a delivery's reconcile, still acting on
    // that change, shares the funnel whose writes quiescent() counts.
    ticking = false;
    const rest = await until(
      () =>
        Promise.resolve(
          inFlight === 0 &&
            performance.now() - lastDelivery > 1_000 &&
            obs.poolDisks(POOL).every((d) => {
              const owner = d.metadata.ownerReferences?.[0];
              return owner?.kind !== 'VirtualMachine' || obs.vms.has(owner.name);
            }),
        ),
      60_000,
    );
    if (rest === undefined) fig.violations.push('not at rest 60 s after converging');
    const q = await quiescent(app, kube, ns, POOL);
    if (q !== undefined) fig.violations.push(q);
    obs.checkDiskDeletions();
    fig.violations.push(...obs.violations);
    fig.observerResumes = obs.resumes;
  } finally {
    clearInterval(timer);
    obs.stop();
    await Promise.all(adapters.map((a) => a.stop()));
    await served.close();
  }
  return fig;
}

/**
 * Runs the scenario for the kube-apiserver and for etcd, each on a fresh control plane, so the
 * restarts disturb no other test.
 */
export async function runProcessRestarts(replicas = 50, targets = 5): Promise<RestartFigures[]> {
  const out: RestartFigures[] = [];
  for (const component of ['kube-apiserver', 'etcd'] as const) {
    const cp = await startControlPlane({ binDir: inject('cluster').binDir });
    try {
      out.push(await runOne(cp, component, replicas, targets));
    } finally {
      await cp.stop();
    }
  }
  return out;
}
