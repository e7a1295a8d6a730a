/** npm start's functions act as ServiceAccount names of their own (local/identities.ts). */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createKube } from '../../shared/kube/index.js';
import { kubeConfigFor } from '../../shared/kube/config.js';
import { impersonatedGroups, impersonating, serviceAccountUser } from '../../local/identities.js';
import { pool } from './builders.js';

describe('impersonating', () => {
  it('sends every request as the function’s ServiceAccount, one Impersonate-Group line per group, with the kubeconfig’s credentials', async () => {
    const raw: string[][] = [];
    const server = createServer((req, res) => {
      raw.push(req.rawHeaders);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(pool()));
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const { port } = server.address() as AddressInfo;
      const user = serviceAccountUser('vmpool-local', 'scale-down-with');
      expect(user).toBe('system:serviceaccount:vmpool-local:scale-down-with');
      const kc = kubeConfigFor({ server: `http://127.0.0.1:${String(port)}` });
      const kube = createKube(impersonating(kc, user, impersonatedGroups('vmpool-local')));
      expect((await kube.getPool('ci', 'runners')).ok).toBe(true);
      const lines = raw[0] ?? [];
      const values = (name: string): string[] =>
        lines.flatMap((v, i) =>
          i % 2 === 0 && v.toLowerCase() === name ? [lines[i + 1] ?? ''] : [],
        );
      expect(values('impersonate-user')).toEqual([user]);
      expect(values('impersonate-group')).toEqual([
        'system:masters',
        'system:serviceaccounts',
        'system:serviceaccounts:vmpool-local',
      ]);
      expect(values('authorization')).toEqual(['Bearer test-token']);
    } finally {
      await new Promise((ok) => server.close(ok));
    }
  });
});
