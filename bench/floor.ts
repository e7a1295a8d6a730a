/**
 * The floor of a cold start, for benchmark 6: Node, an HTTP server, vmpool's lean credentials and
 * keep-alive transport, and one list of pools per event — what every function must do at least,
 * without zod, hono, pino or any of reconcile-pool's code. Bundled like a function and started the
 * same way; its time is the part of reconcile-pool's cold start no change to vmpool's code removes.
 * @module
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadCredentials } from '../shared/kube/credentials.js';
import { createSend } from '../shared/kube/transport.js';

// The group's path spelled out: shared/api would bring zod in.
const POOLS = '/apis/virtualization.deckhouse.io/v1alpha2/namespaces/default/virtualmachinepools';
const send = createSend(await loadCredentials());
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    send({ method: 'GET', path: `${POOLS}?limit=500` }).then(
      (a) => {
        JSON.parse(a.text);
        res.writeHead(a.status < 300 ? 202 : 503).end();
      },
      () => res.writeHead(503).end(),
    );
  });
});
server.listen(Number(process.env.PORT ?? 8080), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ msg: 'floor listening', port }));
});
