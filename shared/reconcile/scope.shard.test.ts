import { describe, expect, it } from 'vitest';
import type { SourceEvent } from '../api/index.js';
import { converged } from './converge.js';
import { reconcileScope } from './resync.js';
import { invalidScope, scopeOf } from './scope.js';
import { NOW, pool, seededRandom } from '../../test/unit/builders.js';
import { fakeKube, ok } from '../../test/unit/fake-kube.js';
import { testLog } from '../../test/logs.js';
import { shardOf } from '../domain/index.js';

const tick = (data: unknown): SourceEvent =>
  ({ type: 'dev.knative.sources.ping', source: '/ping', id: '1', data }) as SourceEvent;

describe('a tick naming a shard', () => {
  it('reads {"shard":"i/n"} beside the namespace, and refuses any other shard text', async () => {
    const { kube } = fakeKube();
    expect(await scopeOf(tick({ shard: '1/4' }), kube)).toEqual({
      kind: 'all',
      shard: { index: 1, count: 4 },
    });
    expect(await scopeOf(tick({ namespace: 'ci', shard: '0/2' }), kube)).toEqual({
      kind: 'namespace',
      namespace: 'ci',
      shard: { index: 0, count: 2 },
    });
    expect(await scopeOf(tick({}), kube)).toEqual({ kind: 'all' });
    for (const bad of ['4/4', 'half', 3]) {
      const scope = await scopeOf(tick({ shard: bad }), kube);
      expect(invalidScope(scope)).toMatch(/^shard ".*" is not of the form i\/n/);
    }
  });

  it('reconciles only the pools whose uid falls in its shard; the shards together cover each pool once', async () => {
    const pools = Array.from({ length: 40 }, (_, i) => pool({ name: `p${i}`, uid: `uid-${i}` }));
    const seen: string[] = [];
    for (let index = 0; index < 3; index++) {
      const f = fakeKube({ listPools: () => ok(pools) });
      const out = await reconcileScope(
        {
          kube: f.kube,
          now: () => NOW,
          rand: seededRandom(1),
          log: testLog('shard'),
        },
        { kind: 'all', shard: { index, count: 3 } },
        (_d, _ns, name) => {
          seen.push(name);
          return Promise.resolve(converged(1, 0));
        },
      );
      const expected = pools.filter((p) => shardOf(p.metadata.uid ?? '', 3) === index);
      expect(expected.length).toBeGreaterThan(5);
      expect(out.map((o) => o.ref?.name)).toEqual(expected.map((p) => p.metadata.name));
      // The window's lists name only the shard's pools.
      const selector = String(f.of('listVms')[0]?.args[1]);
      expect(/\(([^)]*)\)/.exec(selector)?.[1]?.split(',')).toEqual(
        expected.map((p) => p.metadata.uid),
      );
    }
    expect(seen.sort()).toEqual(pools.map((p) => p.metadata.name).sort());
  });
});
