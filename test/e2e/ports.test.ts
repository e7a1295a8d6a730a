/**
 * The local control plane picks its ports free and the child binds them later: a port another
 * process binds in between (a plane starting beside it, any listener on the host) must cost a
 * retry on fresh ports, not the run. CI lost a run to exactly that (kube-apiserver: "bind: address
 * already in use").
 */
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startControlPlane } from '../../local/controlplane/cluster.js';
import type { ControlPlane } from '../../local/controlplane/cluster.js';
import { freePort } from '../../local/controlplane/process.js';

/** A port this process listens on for the whole test: any child given it fails to bind. */
async function heldPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address();
  if (addr === null || typeof addr !== 'object') throw new Error('no port');
  return { server, port: addr.port };
}

describe('ports taken between being found free and being bound', () => {
  let plane: ControlPlane | undefined;
  let held: Server | undefined;
  afterAll(async () => {
    await plane?.stop();
    held?.close();
  });

  it('etcd and kube-apiserver each start again on fresh ports and the plane serves', async () => {
    const busy = await heldPort();
    held = busy.server;
    // etcd asks for two ports (client, peer), kube-apiserver for one: the 1st is etcd's client
    // port on its first attempt, the 5th kube-apiserver's on its first.
    const handed: number[] = [];
    const port = async (): Promise<number> => {
      const p = handed.length === 0 || handed.length === 4 ? busy.port : await freePort();
      handed.push(p);
      return p;
    };
    const lines: string[] = [];
    plane = await startControlPlane({
      binDir: inject('cluster').binDir,
      port,
      log: (l) => lines.push(l),
    });
    expect(handed).toHaveLength(6);
    expect(handed.filter((p) => p === busy.port)).toHaveLength(2);
    expect(lines.filter((l) => l.includes('was taken before use'))).toHaveLength(2);
    expect(new URL(plane.server).port).toBe(String(handed[5]));
    expect(await plane.kubectl(['get', 'namespace', 'default', '-o', 'name'])).toContain(
      'namespace/default',
    );
  }, 120_000);

  it('a start that fails for another reason is not retried', async () => {
    const lines: string[] = [];
    await expect(
      startControlPlane({
        binDir: inject('cluster').binDir,
        // Not a port at all: etcd refuses the URL, which is no reason to try other ports.
        port: () => Promise.resolve(-1),
        log: (l) => lines.push(l),
        timeoutMs: 20_000,
      }),
    ).rejects.toThrow(/etcd/);
    expect(lines.filter((l) => l.includes('was taken before use'))).toHaveLength(0);
  }, 60_000);
});
