import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, VERSION, keys } from '../../shared/api/meta.js';
import type { WatchedObject } from '../../shared/api/index.js';
import { scopeOfObject } from '../../shared/reconcile/scope.js';
import { startAdapter, startPoolSources, type Adapter } from '../../local/controlplane/adapter.js';
import { WATCH_TRIGGER } from '../../local/controlplane/trigger.js';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { cluster, create, dropNamespace, eventually, newNamespace, res } from './harness.js';
import { serviceAccountKubeConfig } from './rbac.js';
import { runnersPool, runnersVm } from '../../local/guide.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

let ns = '';
let sink: Server;
let adapter: Adapter | undefined;
let shipped: Adapter[] = [];
const received: Received[] = [];

beforeAll(async () => {
  ns = await newNamespace('adapter');
  sink = createServer((req, resp) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      resp.writeHead(202).end();
    });
  });
  await new Promise<void>((ok) => sink.listen(0, '127.0.0.1', ok));
});
afterAll(async () => {
  await adapter?.stop();
  await Promise.all(shipped.map((a) => a.stop()));
  sink.close();
  await dropNamespace(ns);
});

/** Where the adapters under test send their events. */
function sinkUrl(): string {
  const addr = sink.address();
  if (addr === null || typeof addr === 'string') throw new Error('sink has no port');
  return `http://127.0.0.1:${addr.port}/`;
}

/**
 * The ApiServerSource of knative/base/eventing.yaml, rendered as the Eventing controller does,
 * confined to this namespace (the shared plane has other tests' objects).
 */
function startShipped(name: string, trigger?: string): Promise<Adapter[]> {
  const { info } = cluster();
  return startPoolSources({
    kubeconfigPath: info.kubeconfigPath,
    binDir: info.knativeBinDir,
    sink: sinkUrl(),
    namespaces: [ns],
    name,
    ...(trigger === undefined ? {} : { trigger }),
  });
}

/** A controller owner reference, as vmpool writes it. */
const owner = (kind: string, name: string, uid: string) => [
  { apiVersion: API_VERSION, kind, name, uid, controller: true, blockOwnerDeletion: true },
];

describe('Knative ApiServerSource adapter against the control plane', () => {
  it('delivers dev.knative.apiserver.resource.add for a new pool (binary mode)', async () => {
    const { info } = cluster();
    adapter = await startAdapter({
      kubeconfigPath: info.kubeconfigPath,
      binDir: info.knativeBinDir,
      sink: sinkUrl(),
      namespaces: [ns],
      namespace: ns,
      resources: [{ gvr: { Group: GROUP, Version: VERSION, Resource: 'virtualmachinepools' } }],
      mode: 'Resource',
    });
    await create('virtualmachinepools', ns, runnersPool(ns, 'evented'));
    const event = await eventually(
      'an add event for the pool',
      () =>
        Promise.resolve(
          received.find(
            (r) =>
              r.headers['ce-type'] === 'dev.knative.apiserver.resource.add' &&
              r.headers['ce-name'] === 'evented',
          ),
        ),
      20_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\nadapter log:\n${adapter?.log() ?? ''}`);
    });
    expect(event.headers['ce-specversion']).toBe('1.0');
    expect(event.headers['ce-namespace']).toBe(ns);
    expect(event.headers['ce-kind']).toBe('VirtualMachinePool');
    const data = JSON.parse(event.body) as { metadata: { name: string } };
    expect(data.metadata.name).toBe('evented');
  });

  it('is ready only once its reflectors have listed: under an identity that may list only later, it waits for the grant', async () => {
    // The adapter's store ignores the first list (eventing's delegate.go Replace), so a pool that
    // is there before a reflector's list is in no event. Ready must mean "listed", which this test
    // makes take seconds: the adapter's identity is refused the list until it is granted. With the
    // old readiness (its "Starting in resilient mode" log line) startAdapter returned at once.
    const { info, kubectl } = cluster();
    const slow = await newNamespace('adapter-ready');
    const dir = mkdtempSync(join(tmpdir(), 'vmpool-adapter-ready-'));
    let late: Adapter | undefined;
    try {
      await create('virtualmachinepools', slow, runnersPool(slow, 'before'));
      await kubectl(['create', 'serviceaccount', 'adapter', '-n', slow]);
      const kubeconfigPath = join(dir, 'adapter.kubeconfig');
      writeFileSync(
        kubeconfigPath,
        (await serviceAccountKubeConfig(info, 'adapter', slow)).exportConfig(),
      );
      const ready = startAdapter({
        kubeconfigPath,
        binDir: info.knativeBinDir,
        sink: sinkUrl(),
        namespaces: [slow],
        namespace: slow,
        name: 'ready',
        resources: [{ gvr: { Group: GROUP, Version: VERSION, Resource: 'virtualmachinepools' } }],
      }).then((a) => ((late = a), Date.now()));
      await new Promise((r) => setTimeout(r, 3000));
      const grant = `--resource=virtualmachinepools.${GROUP}`;
      await kubectl(['create', 'role', 'watch-pools', '--verb=list,watch', grant, '-n', slow]);
      const grantedAt = Date.now();
      await kubectl([
        'create',
        'rolebinding',
        'watch-pools',
        '--role=watch-pools',
        `--serviceaccount=${slow}:adapter`,
        '-n',
        slow,
      ]);
      const readyAt = await ready;
      expect(readyAt).toBeGreaterThan(grantedAt);
      await create('virtualmachinepools', slow, runnersPool(slow, 'after'));
      const added = (r: Received) =>
        r.headers['ce-type'] === 'dev.knative.apiserver.resource.add' &&
        r.headers['ce-namespace'] === slow;
      await eventually(
        'the add event of the pool created once the adapter was ready',
        () => Promise.resolve(received.find((r) => added(r) && r.headers['ce-name'] === 'after')),
        20_000,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}\nadapter log:\n${late?.log() ?? ''}`);
      });
      // The pool listed at start is in no event: why "ready" has to wait for the list.
      expect(received.filter((r) => added(r)).map((r) => r.headers['ce-name'])).toEqual(['after']);
    } finally {
      await late?.stop();
      rmSync(dir, { recursive: true, force: true });
      await dropNamespace(slow);
    }
  }, 120_000);

  it('as knative/ configures it, delivers a Delete-policy disk (controlled by its VM) and filters out unlabelled disks in the API server', async () => {
    await adapter?.stop();
    adapter = undefined;
    shipped = await startShipped(ns);
    const pool = await create('virtualmachinepools', ns, runnersPool(ns, 'labelled'));
    const poolUid = String(pool.metadata.uid);
    const vm = await create('virtualmachines', ns, {
      kind: 'VirtualMachine',
      metadata: {
        name: 'labelled-bcdfg',
        labels: { [keys.poolUid]: poolUid, [keys.pool]: 'labelled' },
        ownerReferences: owner('VirtualMachinePool', 'labelled', poolUid),
      },
      // A whole VM as the pool stamps it: the platform's real VM CRD (VMPOOL_DVP_CRDS) requires
      // class, CPU and memory.
      spec: runnersVm(ns, 'labelled-bcdfg').spec,
    });
    const byVm = owner('VirtualMachine', 'labelled-bcdfg', String(vm.metadata.uid));
    // Created first: were it sent, it would arrive before the labelled disk (one watch stream).
    await create('virtualdisks', ns, {
      kind: 'VirtualDisk',
      metadata: { name: 'stranger-root', ownerReferences: byVm },
      spec: { persistentVolumeClaim: { size: '1Gi' } },
    });
    await create('virtualdisks', ns, {
      kind: 'VirtualDisk',
      metadata: {
        name: 'labelled-bcdfg-root',
        labels: { [keys.poolUid]: poolUid, [keys.pool]: 'labelled' },
        ownerReferences: byVm,
      },
      spec: { persistentVolumeClaim: { size: '1Gi' } },
    });
    const forDisk = await eventually(
      'an add event for the Delete-policy disk',
      () =>
        Promise.resolve(
          received.find(
            (r) =>
              r.headers['ce-kind'] === 'VirtualDisk' &&
              r.headers['ce-name'] === 'labelled-bcdfg-root',
          ),
        ),
      20_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\nadapter log:\n${shipped.map((a) => a.log()).join('\n')}`);
    });
    expect(forDisk.headers['ce-type']).toBe('dev.knative.apiserver.resource.add');
    // reconcile-pool maps it to its pool from the payload alone (not a claim's: claims unread).
    expect(scopeOfObject(JSON.parse(forDisk.body) as WatchedObject)).toEqual({
      kind: 'pool',
      namespace: ns,
      name: 'labelled',
      claims: false,
    });
    const names = (kind: string) =>
      received.filter((r) => r.headers['ce-kind'] === kind).map((r) => r.headers['ce-name']);
    // Disks come on one watch stream, so the stranger would have come first.
    expect(names('VirtualDisk')).not.toContain('stranger-root');
    // Pools and VMs come on watches of their own: no order across kinds, so wait for each.
    for (const [kind, name] of [
      ['VirtualMachine', 'labelled-bcdfg'],
      ['VirtualMachinePool', 'labelled'],
    ] as const) {
      await eventually(
        `an event for ${kind} ${name}`,
        () => Promise.resolve(names(kind).includes(name) ? true : undefined),
        20_000,
      );
    }
  });

  it("with the reconcile-pool Trigger's filters, leaves out a disk's add but sends its update and delete, and a VM's add", async () => {
    await Promise.all(shipped.map((a) => a.stop()));
    // What reaches reconcile-pool through the Broker: the adapter applies the Trigger's own filters
    // with Knative's filter code (there is no Broker here).
    shipped = await startShipped(`${ns}-trigger`, WATCH_TRIGGER);
    const pool = await create('virtualmachinepools', ns, runnersPool(ns, 'filtered'));
    const poolUid = String(pool.metadata.uid);
    const labels = { [keys.poolUid]: poolUid, [keys.pool]: 'filtered' };
    const vm = await create('virtualmachines', ns, {
      kind: 'VirtualMachine',
      metadata: {
        name: 'filtered-bcdfg',
        labels,
        ownerReferences: owner('VirtualMachinePool', 'filtered', poolUid),
      },
      spec: runnersVm(ns, 'filtered-bcdfg').spec,
    });
    await create('virtualdisks', ns, {
      kind: 'VirtualDisk',
      metadata: {
        name: 'filtered-bcdfg-root',
        labels,
        ownerReferences: owner('VirtualMachine', 'filtered-bcdfg', String(vm.metadata.uid)),
      },
      spec: { persistentVolumeClaim: { size: '1Gi' } },
    });
    const custom = cluster().custom;
    await custom.patchNamespacedCustomObject(
      {
        ...res('virtualdisks', ns),
        name: 'filtered-bcdfg-root',
        body: { metadata: { annotations: { touched: 'yes' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await custom.deleteNamespacedCustomObject({
      ...res('virtualdisks', ns),
      name: 'filtered-bcdfg-root',
    });
    const types = () =>
      received
        .filter(
          (r) =>
            r.headers['ce-kind'] === 'VirtualDisk' &&
            r.headers['ce-name'] === 'filtered-bcdfg-root',
        )
        .map((r) => r.headers['ce-type']);
    // One watch stream for disks: the add, were it sent, would come before the update and delete.
    await eventually(
      "the disk's update and delete",
      () =>
        Promise.resolve(
          types().includes('dev.knative.apiserver.resource.delete') ? true : undefined,
        ),
      20_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\nadapter log:\n${shipped.map((a) => a.log()).join('\n')}`);
    });
    expect(types()).toEqual([
      'dev.knative.apiserver.resource.update',
      'dev.knative.apiserver.resource.delete',
    ]);
    await eventually(
      "the VM's add",
      () =>
        Promise.resolve(
          received.some(
            (r) =>
              r.headers['ce-kind'] === 'VirtualMachine' &&
              r.headers['ce-name'] === 'filtered-bcdfg' &&
              r.headers['ce-type'] === 'dev.knative.apiserver.resource.add',
          )
            ? true
            : undefined,
        ),
      20_000,
    );
  });
});
