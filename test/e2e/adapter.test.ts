import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION } from '../../shared/api/meta.js';
import { startAdapter, type Adapter } from '../../local/controlplane/adapter.js';
import { cluster, create, dropNamespace, eventually, newNamespace } from './harness.js';
import { runnersPool } from '../../local/guide.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

let ns = '';
let sink: Server;
let adapter: Adapter | undefined;
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
  sink.close();
  await dropNamespace(ns);
});

describe('Knative ApiServerSource adapter against the control plane', () => {
  it('delivers dev.knative.apiserver.resource.add for a new pool (binary mode)', async () => {
    const { info } = cluster();
    const addr = sink.address();
    if (addr === null || typeof addr === 'string') throw new Error('sink has no port');
    adapter = await startAdapter({
      kubeconfigPath: info.kubeconfigPath,
      binDir: info.knativeBinDir,
      sink: `http://127.0.0.1:${addr.port}/`,
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
});
