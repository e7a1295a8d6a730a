/**
 * Benchmark 9, claims: the time from a VirtualMachineClaim's create to `status.phase: Bound` with an
 * idle member on hand (p50, p99), side by side with the floor — a raw client that watches claims and
 * makes the same two writes (mark the member, write the claim's status) the moment it sees one —;
 * without an idle member (the VM start bounds it: ratio to the simulator's boot time); and the claims
 * a pool with `minIdle: 10` binds per second when they arrive 50 at once. Every run goes through the
 * real adapter and reconcile-pool beside the platform simulator.
 * @module
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Watch } from '@kubernetes/client-node';
import {
  CLAIM_API_VERSION,
  CLAIM_GROUP,
  CLAIM_VERSION,
  GROUP,
  VERSION,
  keys,
} from '../shared/api/index.js';
import { startSimulator } from '../local/simulator/simulator.js';
import type { BenchPlane } from './plane.js';
import { benchPool, clients, percentile } from './objects.js';
import type { Row } from './report.js';
import type { Stack } from './stack.js';

/** The platform's boot time the cold variant models (ms). */
export const BOOT_MS = 2_000;
const MIN_IDLE = 10;
const BURST = 50;

/**
 * Namespaces the stack's adapters must watch for {@link claimsBench}; the floor's namespace is left
 * out on purpose (reconcile-pool must not see its claims).
 */
export const claimsNamespaces = (): string[] => [
  'bench-claims-idle',
  'bench-claims-cold',
  'bench-claims-burst',
];

/** Figures of one run of {@link claimsBench}. */
export interface ClaimsResult {
  /** Claim → Bound with an idle member, ms, one per trial. */
  readonly idleMs: number[];
  /** The raw client's claim → Bound with the same two writes, ms, one per trial. */
  readonly floorMs: number[];
  /** Claim → Bound with no idle member (a VM must start), ms. */
  readonly coldMs: number[];
  /** Claims bound per second, {@link BURST} created at once on a pool with minIdle 10. */
  readonly perSecond: number;
  readonly bootMs: number;
}

interface SeenClaim {
  metadata: { name: string; uid: string; resourceVersion: string; creationTimestamp?: string };
  status?: { phase?: string };
}

/** A watch of one namespace's claims: resolves waiters when a claim reaches Bound. */
async function watchClaims(kc: KubeConfig, ns: string, onAdded?: (c: SeenClaim) => void) {
  const bound = new Map<string, number>();
  const waiters = new Map<string, (at: number) => void>();
  const ctl = await new Watch(kc).watch(
    `/apis/${CLAIM_GROUP}/${CLAIM_VERSION}/namespaces/${ns}/virtualmachineclaims`,
    {},
    (type: string, o: SeenClaim) => {
      if (type === 'ADDED') onAdded?.(o);
      if (o.status?.phase !== 'Bound' || bound.has(o.metadata.name)) return;
      const at = performance.now();
      bound.set(o.metadata.name, at);
      waiters.get(o.metadata.name)?.(at);
    },
    () => undefined,
  );
  return {
    bound: (name: string, timeoutMs = 120_000): Promise<number> =>
      new Promise((resolve, reject) => {
        const at = bound.get(name);
        if (at !== undefined) {
          resolve(at);
          return;
        }
        const timer = setTimeout(() => {
          reject(new Error(`claims bench: ${ns}/${name} not Bound in ${String(timeoutMs)} ms`));
        }, timeoutMs);
        waiters.set(name, (t) => {
          clearTimeout(timer);
          resolve(t);
        });
      }),
    stop: () => {
      ctl.abort();
    },
  };
}

function claimBody(ns: string, name: string, pool: string) {
  return {
    apiVersion: CLAIM_API_VERSION,
    kind: 'VirtualMachineClaim',
    metadata: { name, namespace: ns },
    spec: { poolName: pool, holder: 'bench', onRelease: 'Delete' },
  };
}

function claimsApi(kc: KubeConfig) {
  const { custom } = clients(kc);
  const res = (ns: string) => ({
    group: CLAIM_GROUP,
    version: CLAIM_VERSION,
    plural: 'virtualmachineclaims',
    namespace: ns,
  });
  return {
    create: (ns: string, name: string, pool: string) =>
      custom.createNamespacedCustomObject({ ...res(ns), body: claimBody(ns, name, pool) }),
    remove: (ns: string, name: string) => custom.deleteNamespacedCustomObject({ ...res(ns), name }),
    replaceStatus: (ns: string, body: { metadata: { name: string } } & Record<string, unknown>) =>
      custom.replaceNamespacedCustomObjectStatus({ ...res(ns), name: body.metadata.name, body }),
  };
}

/** Polls the pool until `test` holds on its status. */
async function untilPool(
  kc: KubeConfig,
  ns: string,
  test: (s: { idleReplicas?: number; readyReplicas?: number }) => boolean,
  timeoutMs = 180_000,
): Promise<void> {
  const c = clients(kc);
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const p = await c.getPool(ns, 'p');
    if (test(p.status ?? {})) return;
    if (performance.now() > deadline) throw new Error(`claims bench: pool ${ns}/p never settled`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function simulate(plane: BenchPlane, ns: string, bootMs: number) {
  return startSimulator({
    kubeconfigPath: plane.cp.kubeconfigPath,
    namespace: ns,
    intervalMs: 50,
    delays: {
      diskReady: 100,
      vmStarting: bootMs,
      vmPending: 50,
      vmStopping: 50,
      vmTerminating: 100,
    },
  });
}

/** A pool of 0 replicas whose claims keep `minIdle` idle members, up to `max`. */
async function claimsPool(kc: KubeConfig, ns: string, minIdle: number, max: number) {
  const c = clients(kc);
  await c.namespace(ns);
  const pool = benchPool(ns, 'p', 0);
  Object.assign(pool.spec, { claims: { minIdle, maxReplicas: max, onRelease: 'Delete' } });
  await c.createPool(pool);
}

/**
 * Claim → Bound on a pool of `minIdle` kept idle, `trials` times, one claim at a time, each created
 * once the pool's status says `ready` and released (Delete) when Bound.
 */
async function trialsOn(
  plane: BenchPlane,
  ns: string,
  minIdle: number,
  bootMs: number,
  trials: number,
  ready: (s: { idleReplicas?: number; readyReplicas?: number }) => boolean,
): Promise<number[]> {
  await claimsPool(plane.kc, ns, minIdle, 10);
  const sim = simulate(plane, ns, bootMs);
  const watch = await watchClaims(plane.kc, ns);
  const api = claimsApi(plane.kc);
  const out: number[] = [];
  try {
    for (let i = 0; i < trials; i++) {
      await untilPool(plane.kc, ns, ready);
      const t0 = performance.now();
      await api.create(ns, `c${String(i)}`, 'p');
      out.push((await watch.bound(`c${String(i)}`)) - t0);
      await api.remove(ns, `c${String(i)}`);
    }
  } finally {
    watch.stop();
    await sim.stop();
  }
  return out;
}

/** Claim → Bound with an idle member: minIdle 2, the pool back to 2 idle between trials. */
const idleTrials = (plane: BenchPlane, trials: number): Promise<number[]> =>
  trialsOn(plane, 'bench-claims-idle', 2, 200, trials, (s) => (s.idleReplicas ?? 0) >= 2);

/**
 * The floor: a raw client that, on each claim it sees added, marks an idle VM (PUT with the
 * resourceVersion it read) and writes the claim's status Bound — the two writes vmpool makes — while
 * reconcile-pool is not involved (the pool of this namespace has no claims field and no members
 * are its; the VMs are plain objects the client created).
 */
async function floorTrials(plane: BenchPlane, trials: number): Promise<number[]> {
  const ns = 'bench-claims-floor';
  const c = clients(plane.kc);
  await c.namespace(ns);
  const vmRes = { group: GROUP, version: VERSION, plural: 'virtualmachines', namespace: ns };
  const api = claimsApi(plane.kc);
  const vms: string[] = [];
  for (let i = 0; i < trials; i++) {
    const name = `vm${String(i)}`;
    await c.custom.createNamespacedCustomObject({
      ...vmRes,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'VirtualMachine',
        metadata: { name, namespace: ns },
        spec: benchPool(ns, 'p', 0).spec.virtualMachineTemplate.spec,
      },
    });
    vms.push(name);
  }
  const react = async (claim: SeenClaim): Promise<void> => {
    const vm = vms.shift();
    if (vm === undefined) return;
    const got = (await c.custom.getNamespacedCustomObject({ ...vmRes, name: vm })) as {
      metadata: { annotations?: Record<string, string>; labels?: Record<string, string> };
    };
    got.metadata.annotations = {
      ...got.metadata.annotations,
      [keys.claimedBy]: claim.metadata.name,
    };
    got.metadata.labels = { ...got.metadata.labels, [keys.claimed]: 'true' };
    await c.custom.replaceNamespacedCustomObject({ ...vmRes, name: vm, body: got });
    const metadata = {
      name: claim.metadata.name,
      namespace: ns,
      resourceVersion: claim.metadata.resourceVersion,
    };
    const status = { phase: 'Bound', virtualMachineName: vm, boundAt: new Date().toISOString() };
    await api.replaceStatus(ns, { ...claimBody(ns, claim.metadata.name, 'p'), metadata, status });
  };
  const watch = await watchClaims(plane.kc, ns, (claim) => void react(claim));
  const out: number[] = [];
  try {
    for (let i = 0; i < trials; i++) {
      const t0 = performance.now();
      await api.create(ns, `c${String(i)}`, 'p');
      out.push((await watch.bound(`c${String(i)}`)) - t0);
    }
  } finally {
    watch.stop();
  }
  return out;
}

/** Claim → Bound with no idle member: the pool grows by one and the claim waits for its boot. */
const coldTrials = (plane: BenchPlane, trials: number): Promise<number[]> =>
  trialsOn(plane, 'bench-claims-cold', 0, BOOT_MS, trials, (s) => (s.readyReplicas ?? 0) === 0);

/** {@link BURST} claims at once on a pool keeping 10 idle: claims bound per second. */
async function burst(plane: BenchPlane): Promise<number> {
  const ns = 'bench-claims-burst';
  await claimsPool(plane.kc, ns, MIN_IDLE, BURST + MIN_IDLE);
  const sim = simulate(plane, ns, 200);
  const watch = await watchClaims(plane.kc, ns);
  const api = claimsApi(plane.kc);
  try {
    await untilPool(plane.kc, ns, (s) => (s.idleReplicas ?? 0) >= MIN_IDLE);
    const names = Array.from({ length: BURST }, (_, i) => `b${String(i)}`);
    const t0 = performance.now();
    await Promise.all(names.map((n) => api.create(ns, n, 'p')));
    const last = Math.max(...(await Promise.all(names.map((n) => watch.bound(n, 300_000)))));
    return (BURST * 1000) / (last - t0);
  } finally {
    watch.stop();
    await sim.stop();
  }
}

/** Runs every part of the claims benchmark, floor and vmpool interleaved in one run. */
export async function claimsBench(
  plane: BenchPlane,
  _stack: Stack,
  trials: number,
  log: (l: string) => void,
): Promise<ClaimsResult> {
  const floorMs = await floorTrials(plane, trials);
  log(`claims floor: p50 ${percentile(floorMs, 50).toFixed(0)} ms over ${String(trials)} trials`);
  const idleMs = await idleTrials(plane, trials);
  log(`claims idle: p50 ${percentile(idleMs, 50).toFixed(0)} ms over ${String(trials)} trials`);
  const coldMs = await coldTrials(plane, Math.max(3, Math.round(trials / 10)));
  log(`claims cold: p50 ${percentile(coldMs, 50).toFixed(0)} ms`);
  const perSecond = await burst(plane);
  log(`claims burst: ${perSecond.toFixed(1)} claims/s`);
  return { idleMs, floorMs, coldMs, perSecond, bootMs: BOOT_MS };
}

/** The table rows, each figure beside its floor. */
export function claimsRows(r: ClaimsResult): Row[] {
  const p = (xs: number[], q: number) => percentile(xs, q);
  const ms = (x: number) => `${x.toFixed(0)} ms`;
  const idle50 = p(r.idleMs, 50);
  const floor50 = p(r.floorMs, 50);
  const idle99 = p(r.idleMs, 99);
  const floor99 = p(r.floorMs, 99);
  const cold50 = p(r.coldMs, 50);
  return [
    {
      bench: '9 claims: claim → Bound, idle member',
      figure: `p50 (raw client's two writes: ${ms(floor50)})`,
      value: `${ms(idle50)}, ${(idle50 / floor50).toFixed(2)}× the floor`,
      goal: '',
    },
    {
      bench: '',
      figure: `p99 (raw client: ${ms(floor99)})`,
      value: `${ms(idle99)}, ${(idle99 / floor99).toFixed(2)}× the floor`,
      goal: '',
    },
    {
      bench: '',
      figure: `no idle member, p50 (VM boot ${ms(r.bootMs)})`,
      value: `${ms(cold50)}, ${(cold50 / r.bootMs).toFixed(2)}× the boot`,
      goal: '',
    },
    {
      bench: '',
      figure: `${String(BURST)} claims at once, minIdle ${String(MIN_IDLE)}`,
      value: `${r.perSecond.toFixed(1)} claims/s`,
      goal: '',
    },
  ];
}
