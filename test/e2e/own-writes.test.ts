/**
 * reconcile-pool answers the events of its own writes, read past by a later pass, without reconciling
 * again (shared/reconcile/own-writes.ts). Here on the real API server with the real ApiServerSource
 * adapter and no resync tick, so every convergence below comes from events alone: a scale-up, and a
 * person's delete and edit landing among the pool's own writes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import { serveApp, type ServedApp } from '../../shared/http/index.js';
import { startPoolSources, type Adapter } from '../../local/controlplane/adapter.js';
import { WATCH_TRIGGER } from '../../local/controlplane/trigger.js';
import { smallPool } from '../../local/guide.js';
import {
  cluster,
  create,
  dropNamespace,
  eventually,
  functionKube,
  newNamespace,
  read,
} from './harness.js';
import { members, openIntent } from './members.js';
import { userOf } from './user.js';
import { testLog } from '../logs.js';

let ns = '';
let app: ServedApp;
let url = '';
let adapters: Adapter[] = [];

beforeAll(async () => {
  ns = await newNamespace('own');
  const { info } = cluster();
  const kube = await functionKube('reconcile-pool');
  app = serveApp(buildReconcileApp({ kube, log: testLog('reconcile-pool', 'silent') }), {
    port: 0,
    hostname: '127.0.0.1',
    handleSignals: false,
  });
  url = `http://127.0.0.1:${(await app.listening).port}/`;
  adapters = await startPoolSources({
    kubeconfigPath: info.kubeconfigPath,
    binDir: info.knativeBinDir,
    sink: url,
    namespaces: [ns],
    name: ns,
    trigger: WATCH_TRIGGER,
  });
});
afterAll(async () => {
  await Promise.all(adapters.map((a) => a.stop()));
  await app.close();
  await dropNamespace(ns);
});

/** reconcile-pool's reconcile answers by outcome, from its /metrics. */
async function answers(): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^vmpool_reconciles_total\{[^}]*outcome="(\w+)"[^}]*\} (\d+)$/gm))
    out[m[1] ?? ''] = Number(m[2]);
  return out;
}

/** The pool at rest with `n` live members, nothing Terminating and no open intent; their names. */
async function atRest(pool: string, n: number): Promise<string[]> {
  return eventually(
    `${pool} at rest with ${String(n)} members`,
    async () => {
      const p = await read('virtualmachinepools', ns, pool);
      const all = await members(ns, pool);
      const status = (p?.status ?? {}) as { replicas?: number; intent?: unknown };
      const rest =
        all.length === n &&
        all.every((m) => !m.terminating) &&
        status.replicas === n &&
        openIntent(status.intent, all) === undefined;
      return rest ? all.map((m) => m.name).sort() : undefined;
    },
    60_000,
  );
}

/** Waits until the answers stop changing for a second (the adapters delivered everything). */
async function settled(): Promise<Record<string, number>> {
  let last = JSON.stringify(await answers());
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = await answers();
    if (JSON.stringify(now) === last) return now;
    last = JSON.stringify(now);
  }
}

describe('events of reconcile-pool’s own writes', () => {
  it('a scale-up converges on events alone; its own creates come back answered without a reconcile', async () => {
    await create(
      'virtualmachinepools',
      ns,
      smallPool(ns, 'own', (p) => (p.spec.replicas = 12)),
    );
    const names = await atRest('own', 12);
    expect(names).toHaveLength(12);
    const a = await settled();
    console.error(`[own-writes] answers of the scale-up 0→12 by outcome: ${JSON.stringify(a)}`);
    // 12 VMs created, each delivered back as an add event read past by the pass after (a disk's
    // add, 24 more, is dropped by the watch Trigger and never reaches the function).
    expect(a.ownWrite ?? 0).toBeGreaterThanOrEqual(12);
    expect(a.failed ?? 0).toBe(0);
    // Still at rest once every event is answered: nothing was left for a reconcile to do.
    expect(await atRest('own', 12)).toEqual(names);
  });

  it('a person’s delete and detach among the pool’s own writes are acted on (no resync tick)', async () => {
    const user = userOf(ns);
    const before = await atRest('own', 12);
    await user.kubectl(['scale', 'virtualmachinepool/own', '--replicas=16']);
    // While the pool creates, a person deletes one of its members and takes another out of it.
    const victim = before[0] ?? '';
    const detached = before[1] ?? '';
    await user.kubectl(['delete', 'virtualmachine', victim, '--wait=false']);
    await user.kubectl(['label', 'virtualmachine', detached, `${keys.poolUid}-`, `${keys.pool}-`]);
    const after = await atRest('own', 16);
    expect(after).not.toContain(victim);
    expect(after).not.toContain(detached);
    expect(await read('virtualmachines', ns, victim)).toBeUndefined();
    expect(await read('virtualmachines', ns, detached)).toBeDefined();
    await settled();
    expect(await atRest('own', 16)).toEqual(after);
  });
});
