/**
 * A namespace of the chaos suite with everything a trial drives: the observer, reconcile-pool under
 * its own ServiceAccount as several instances (as Knative runs more than one pod, so deliveries of
 * one pool really run at once), and optionally the platform simulator.
 * @module
 */
import type { Hono } from 'hono';
import { inject } from 'vitest';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import type { NodeEnv } from '../../shared/http/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { seededRandom } from '../../local/simulator/rng.js';
import { startSimulator } from '../../local/simulator/simulator.js';
import type { Simulator, SimulatorOptions } from '../../local/simulator/simulator.js';
import { dropNamespace, functionKube, newNamespace } from '../e2e/harness.js';
import { testLog } from '../logs.js';
import { platformSettled } from './delivery.js';
import type { Storm } from './delivery.js';
import { adminKube, writesBetween } from './kit.js';
import type { Rng } from './kit.js';
import { resync } from './laws.js';
import { Observer } from './observer.js';

/** Options of {@link startRig}. */
export interface RigOptions {
  readonly label: string;
  readonly seed: number;
  /** reconcile-pool's create burst (the observer's grace after a drop of the desire). */
  readonly burst: number;
  /** reconcile-pool instances (default 2). */
  readonly instances?: number;
  /** Runs the platform simulator on the namespace, with these extra options. */
  readonly simulator?: Pick<SimulatorOptions, 'neverStart'>;
}

/** A running rig. */
export interface Rig {
  readonly ns: string;
  readonly obs: Observer;
  /** The admin's Kube (the user, the agents). */
  readonly direct: Kube;
  /** reconcile-pool's Kube (one ServiceAccount, shared by its instances). */
  readonly kube: Kube;
  readonly apps: ReadonlyArray<Hono<NodeEnv>>;
  readonly sim: Simulator | undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Starts a rig in a fresh namespace. */
export async function startRig(o: RigOptions): Promise<Rig> {
  const ns = await newNamespace(o.label);
  const obs = await Observer.start(ns);
  obs.desire.burst = o.burst;
  const kube = await functionKube('reconcile-pool', { reportingInstance: 'vmpool-chaos' });
  const log = testLog(o.label, 'silent');
  const apps = Array.from({ length: o.instances ?? 2 }, (_, i) =>
    buildReconcileApp({ kube, log, rand: seededRandom(o.seed * 7 + i), createBurst: o.burst }),
  );
  const sim =
    o.simulator === undefined
      ? undefined
      : startSimulator({
          kubeconfigPath: inject('cluster').kubeconfigPath,
          namespace: ns,
          seed: o.seed,
          jitter: 0.5,
          nodes: ['n1', 'n2', 'n3'],
          delays: {
            diskReady: 50,
            vmPending: 50,
            vmStarting: 100,
            vmStopping: 50,
            vmTerminating: 250,
          },
          ...o.simulator,
        });
  return { ns, obs, direct: adminKube(), kube, apps, sim };
}

/** Stops the rig and drops its namespace; returns the observer's violations. */
export async function stopRig(rig: Rig): Promise<string[]> {
  await rig.sim?.stop();
  rig.obs.checkDiskDeletions();
  rig.obs.stop();
  await dropNamespace(rig.ns);
  return [...rig.obs.violations];
}

/** Delivers a storm, each event to a random instance after its delay; returns the replies. */
export async function deliver(rig: Rig, dice: Rng, storm: Storm): Promise<number[]> {
  return Promise.all(
    storm.sends.map(async (s) => {
      await sleep(s.delay);
      return (await dice.pick(rig.apps).request('/', s.init)).status;
    }),
  );
}

/**
 * Resyncs until reconcile-pool converges, one more pass writes nothing and, beside the simulator,
 * the platform has settled for `pool`. Whether it did within `rounds`.
 */
export async function settleRig(rig: Rig, pool: string, rounds = 100): Promise<boolean> {
  const app = rig.apps[0]!;
  for (let round = 0; round < rounds; round++) {
    if (!(await resync(app, rig.ns)).converged) return false;
    if (rig.sim === undefined || (await platformSettled(rig.direct, rig.ns, pool))) {
      const before = rig.kube.counts();
      if ((await resync(app, rig.ns)).converged && writesBetween(before, rig.kube.counts()) === 0)
        return true;
    }
    await sleep(100);
  }
  return false;
}
