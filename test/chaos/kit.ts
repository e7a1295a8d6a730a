/**
 * Shared pieces of the chaos suite: seeded dice, the admin Kube, a small pool, write counting, a
 * Kube that dies after its k-th call, and the figures every part prints.
 * @module
 */
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import type { VirtualMachinePool } from '../../shared/api/index.js';
import { API_VERSION, GROUP, SUBRESOURCES_GROUP, VERSION } from '../../shared/api/index.js';
import type { Kube, KubeOptions, RequestCounts } from '../../shared/kube/index.js';
import { createKube } from '../../shared/kube/index.js';
import { seededRandom } from '../../local/simulator/rng.js';
import { smallPool } from '../../local/guide.js';
import { cluster } from '../e2e/harness.js';

/** The seed of a run: `VMPOOL_CHAOS_SEED`, or a fixed default so CI replays the same schedule. */
export const CHAOS_SEED = Number(process.env.VMPOOL_CHAOS_SEED ?? 20_251_130);

/** Seeded dice. */
export interface Rng {
  next(): number;
  /** Integer in [0, n). */
  int(n: number): number;
  /** Integer in [lo, hi]. */
  range(lo: number, hi: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  shuffle<T>(items: readonly T[]): T[];
}

/** Dice determined entirely by `seed`. */
export function rng(seed: number): Rng {
  const next = seededRandom(seed);
  const int = (n: number): number => Math.floor(next() * n);
  return {
    next,
    int,
    range: (lo, hi) => lo + int(hi - lo + 1),
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => items[int(items.length)] as T,
    shuffle: <T>(items: readonly T[]): T[] => {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [out[i], out[j]] = [out[j] as T, out[i] as T];
      }
      return out;
    },
  };
}

/** The admin kubeconfig of the shared control plane. */
export function adminKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject('cluster').kubeconfigPath);
  return kc;
}

/** A Kube straight to the API server (no faults). */
export function adminKube(opts: KubeOptions = {}): Kube {
  return createKube(adminKubeConfig(), { reportingInstance: 'vmpool-chaos', ...opts });
}

/** Verbs that change something in the API server (a dry run changes nothing). */
export const WRITE_VERBS = ['create', 'update', 'updateStatus', 'delete', 'event'] as const;

/** Writes in a counts snapshot. */
export function writesIn(c: RequestCounts): number {
  return WRITE_VERBS.reduce((n, v) => n + (c[v] ?? 0), 0);
}

/** Writes between two snapshots. */
export function writesBetween(before: RequestCounts, after: RequestCounts): number {
  return writesIn(after) - writesIn(before);
}

/** Retain template name and settings of the chaos pool. */
export const RETAIN = 'cache';
export const DELETE = 'root';

/** The guide's pool, small: a Delete boot disk and a Retain disk (keep 1, ttl 1h), template label `rev`. */
export function chaosPool(
  namespace: string,
  name: string,
  policy: 'NewestFirst' | 'OldestFirst' | 'Explicit',
  replicas: number,
  keep = 1,
): object {
  const pool = smallPool(namespace, name, (p) => {
    p.spec.replicas = replicas;
    p.spec.scaleDownPolicy = policy;
    p.spec.virtualMachineTemplate.spec.cpu.cores = 1;
    p.spec.virtualDiskTemplates[1]!.reclaim = { onScaleDown: 'Retain', keep, ttl: '1h' };
  });
  const template = { ...pool.spec.virtualMachineTemplate, metadata: { labels: { rev: '0' } } };
  return {
    apiVersion: API_VERSION,
    ...pool,
    spec: { ...pool.spec, virtualMachineTemplate: template },
  };
}

/**
 * Creates a pool (vmpool itself never creates pools, so the funnel has no call for it), on the
 * shared plane unless `kc` names another.
 */
export async function createPool(
  namespace: string,
  manifest: object,
  kc: KubeConfig = adminKubeConfig(),
): Promise<void> {
  await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'virtualmachinepools',
    namespace,
    body: manifest,
  });
}

/** Deletes a pool (the garbage collector then deletes what it owns), on the shared plane. */
export async function deletePool(namespace: string, name: string): Promise<void> {
  await adminKubeConfig().makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'virtualmachinepools',
    namespace,
    name,
  });
}

/**
 * Applies `edit` to the live pool with a conditioned update, re-reading on conflict (as kubectl
 * does); returns the stored pool.
 */
export async function editPool(
  kube: Kube,
  namespace: string,
  name: string,
  edit: (p: VirtualMachinePool) => VirtualMachinePool,
): Promise<VirtualMachinePool> {
  for (let i = 0; i < 50; i++) {
    const got = await kube.getPool(namespace, name);
    if (!got.ok) throw new Error(`get pool ${name}: ${got.message}`);
    const wrote = await kube.updatePool(edit(structuredClone(got.value)));
    if (wrote.ok) return wrote.value;
    if (wrote.reason !== 'conflict') throw new Error(`update pool ${name}: ${wrote.message}`);
  }
  throw new Error(`update pool ${name}: kept conflicting`);
}

/** Thrown by {@link crashingKube} once the function is "dead". */
export class Crash extends Error {
  constructor(k: number) {
    super(`crashed after API call ${k}`);
    this.name = 'Crash';
  }
}

/** A Kube that lets `k` calls reach the server, loses the answer of the k-th and refuses the rest. */
export interface CrashingKube {
  readonly kube: Kube;
  /** Calls attempted so far (calls after the k-th never reach the server). */
  calls(): number;
  crashed(): boolean;
}

/** Wraps `inner` so the "process" dies right after its k-th API call (k ≥ 1). */
export function crashingKube(inner: Kube, k: number): CrashingKube {
  let n = 0;
  const dead = (): Promise<never> => {
    const p = Promise.reject(new Crash(k));
    // A dead process handles nothing: keep the rejection from counting as unhandled.
    p.catch(() => undefined);
    return p;
  };
  const kube = new Proxy(inner, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function' || prop === 'counts') return v;
      const fn = v as (...args: unknown[]) => Promise<unknown>;
      return (...args: unknown[]): Promise<unknown> => {
        n++;
        if (n > k) return dead();
        if (n < k) return fn.apply(target, args);
        const p = fn.apply(target, args).then(() => dead());
        p.catch(() => undefined);
        return p;
      };
    },
  });
  return { kube, calls: () => n, crashed: () => n >= k };
}

/** A fixed-width table for the figures printed after each part. */
export function table(
  title: string,
  rows: ReadonlyArray<readonly [string, string | number]>,
): string {
  const w = Math.max(...rows.map(([k]) => k.length));
  return [`[chaos] ${title}`, ...rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`)].join('\n');
}

/** Milliseconds since `t0`, as seconds with one decimal. */
export function secondsSince(t0: number): string {
  return `${((performance.now() - t0) / 1000).toFixed(1)} s`;
}

/** The audience chaos senders' tokens are issued for (what knative/ configures). */
export const SENDER_AUDIENCE = 'apps/deployment/vmpool-system/scale-down-with';

/**
 * A real sender of scaledownwith CloudEvents in `namespace`: a ServiceAccount allowed to create
 * `virtualmachinepools/scaledownwith` there, and a token the API server issued it for
 * {@link SENDER_AUDIENCE}, as Knative Eventing's OIDC sender identity is. Returns the
 * `Authorization` header value.
 */
export async function senderToken(
  namespace: string,
  name = 'chaos-sender',
  audience = SENDER_AUDIENCE,
): Promise<string> {
  const { applyManifest, kubectl } = cluster();
  await applyManifest([
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules: [
        {
          apiGroups: [SUBRESOURCES_GROUP],
          resources: ['virtualmachinepools/scaledownwith'],
          verbs: ['create'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ]);
  const token = await kubectl(['create', 'token', name, '-n', namespace, `--audience=${audience}`]);
  return `Bearer ${token.trim()}`;
}
