/**
 * Laws L1 and L2 on the real API server: many deliveries of the same and different events at once,
 * with random delays, while a watch records every membership change.
 */
import { randomUUID } from 'node:crypto';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, PING, VERSION, keys } from '../../shared/api/index.js';
import { cluster, create, dropNamespace, eventually, newNamespace, read } from './harness.js';
import { smallPool } from '../../local/guide.js';
import { startStack, type Stack } from './stack.js';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import { createLogger, serveApp, type ServedApp } from '../../shared/http/index.js';
import { expectedVictims } from '../chaos/laws.js';
import { members as readMembers, openIntent } from './members.js';
import type { Seen } from '../chaos/observer.js';

const TRIALS = Number(process.env.VMPOOL_CONCURRENCY_TRIALS ?? 8);
const PARALLEL = 24;

let ns = '';
let stack: Stack;
/** Several reconcile-pool instances, as several pods would be: each coalesces only its own calls. */
let replicas: ServedApp[] = [];
let urls: string[] = [];

beforeAll(async () => {
  ns = await newNamespace('conc');
  stack = await startStack(ns, { resyncMs: 0 });
  const log = createLogger('reconcile-pool', { level: 'silent' });
  replicas = [0, 1].map(() =>
    serveApp(buildReconcileApp({ kube: stack.kube, log }), {
      port: 0,
      hostname: '127.0.0.1',
      handleSignals: false,
    }),
  );
  urls = [
    stack.reconcileUrl,
    ...(await Promise.all(
      replicas.map(async (r) => `http://127.0.0.1:${(await r.listening).port}/`),
    )),
  ];
});
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await stack.stop();
  await dropNamespace(ns);
});

/** A live record of a pool's members, from a watch. */
interface Observer {
  readonly maxMembers: number;
  readonly deleted: Set<string>;
  readonly current: () => Map<string, Seen>;
  resetMax(): void;
  stop(): void;
}

async function observe(pool: string): Promise<Observer> {
  const kc = new KubeConfig();
  kc.loadFromFile(cluster().info.kubeconfigPath);
  const members = new Map<string, Seen>();
  const deleted = new Set<string>();
  let max = 0;
  const ctl = await new Watch(kc).watch(
    `/apis/${GROUP}/${VERSION}/namespaces/${ns}/virtualmachines`,
    { labelSelector: `${keys.pool}=${pool}` },
    (type: string, obj: Seen) => {
      const m = obj.metadata;
      if (type === 'DELETED') members.delete(m.name);
      else members.set(m.name, obj);
      if (type === 'DELETED' || m.deletionTimestamp !== undefined) deleted.add(m.name);
      max = Math.max(max, members.size);
    },
    () => undefined,
  );
  return {
    get maxMembers() {
      return max;
    },
    deleted,
    current: () => members,
    resetMax: () => {
      max = members.size;
    },
    stop: () => {
      ctl.abort();
    },
  };
}

/**
 * Fires `n` deliveries at once, spread over the reconcile-pool instances: resource events for the pool
 * and pings, each after a random delay.
 */
async function storm(pool: string, n: number, seed: number): Promise<number[]> {
  const p = await read('virtualmachinepools', ns, pool);
  let s = seed;
  const rnd = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      await new Promise((r) => setTimeout(r, Math.floor(rnd() * 60)));
      const ping = i % 4 === 3;
      const res = await fetch(urls[i % urls.length] ?? stack.reconcileUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'ce-specversion': '1.0',
          'ce-id': i % 2 === 0 ? 'same-id' : randomUUID(),
          'ce-type': ping ? PING : 'dev.knative.apiserver.resource.update',
          'ce-source': 'https://127.0.0.1',
        },
        body: JSON.stringify(
          ping ? { namespace: ns } : { ...p, apiVersion: API_VERSION, kind: 'VirtualMachinePool' },
        ),
      });
      return res.status;
    }),
  );
}

function poolSpec(name: string, replicas: number) {
  return smallPool(ns, name, (p) => {
    p.spec.replicas = replicas;
  });
}

async function settled(pool: string, n: number): Promise<void> {
  await eventually(
    `${pool} settled at ${n}`,
    async () => {
      const st = (await read('virtualmachinepools', ns, pool))?.status as
        { replicas?: number; intent?: unknown } | undefined;
      const open = openIntent(st?.intent, await readMembers(ns, pool));
      return st?.replicas === n && open === undefined ? true : undefined;
    },
    60_000,
  );
}

describe('concurrent deliveries (L1, L2)', () => {
  it(`holds over ${TRIALS} trials of ${PARALLEL} parallel deliveries`, async () => {
    const violations: string[] = [];
    let deliveries = 0;
    for (let t = 0; t < TRIALS; t++) {
      const name = `c${t}`;
      const up = 2 + (t % 4);
      const down = 1 + (t % 2);
      const obs = await observe(name);
      await create('virtualmachinepools', ns, poolSpec(name, up));
      const codes = await storm(name, PARALLEL, t + 1);
      deliveries += codes.length;
      await settled(name, up);
      if (obs.maxMembers > up)
        violations.push(`trial ${t}: ${obs.maxMembers} members with replicas ${up} (L1)`);
      if (codes.some((c) => c !== 202 && c !== 503))
        violations.push(`trial ${t}: codes ${codes.join(',')}`);

      // L2: an unaddressed scale-down removes exactly the newest surplus (NewestFirst).
      const live = [...obs.current().values()].filter(
        (m) => m.metadata.deletionTimestamp === undefined,
      );
      const expected = [...expectedVictims(live, 'NewestFirst', live.length - down)].sort();
      obs.resetMax();
      await cluster().kubectl([
        'scale',
        `virtualmachinepool/${name}`,
        `--replicas=${down}`,
        '-n',
        ns,
      ]);
      deliveries += (await storm(name, PARALLEL, 100 + t)).length;
      await settled(name, down);
      const removed = [...obs.deleted].sort();
      if (JSON.stringify(removed) !== JSON.stringify(expected))
        violations.push(
          `trial ${t}: removed ${removed.join(',')} expected ${expected.join(',')} (L2)`,
        );
      if (obs.maxMembers > up)
        violations.push(`trial ${t}: grew to ${obs.maxMembers} while scaling down (L1)`);
      obs.stop();
      await cluster().kubectl(['delete', 'virtualmachinepool', name, '-n', ns, '--wait=false']);
    }
    console.log(
      `[concurrency] ${TRIALS} trials, ${deliveries} deliveries, violations: ${violations.length}`,
    );
    expect(violations).toEqual([]);
  }, 600_000);
});
