import { describe, expect, it } from 'vitest';
import { malformedOf } from '../api/index.js';
import { at, MINUTE, pool, vm } from '../../test/unit/builders.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import { poolMeta, poolVictims } from './pool-reads.js';

const API = 'subresources.example/v1alpha2';
const p = pool({ replicas: 2 });

describe('poolMeta', () => {
  it("answers the pool's metadata under the aggregated group, or a Status", async () => {
    expect(await poolMeta(fakeKube({}, p).kube, 'ci', 'runners', API)).toEqual({
      apiVersion: API,
      kind: 'VirtualMachinePool',
      metadata: p.metadata,
    });
    expect(await poolMeta(fakeKube().kube, 'ci', 'runners', API)).toMatchObject({
      kind: 'Status',
      code: 404,
    });
    const down = fakeKube({ getPool: () => fail('transient') }).kube;
    expect(await poolMeta(down, 'ci', 'runners', API)).toMatchObject({ code: 500 });
  });
});

describe('poolVictims', () => {
  const members = [
    vm(p, 'runners-old01', { created: at(-9 * MINUTE) }),
    vm(p, 'runners-new01', { created: at(-MINUTE) }),
  ];

  it('previews the next victims by the reconciler ranking, as VirtualMachinePoolVictims', async () => {
    const kube = fakeKube({ listVms: () => ok(members) }, p).kube;
    const doc = await poolVictims(kube, 'ci', 'runners', '1', API);
    expect(doc).toMatchObject({
      apiVersion: API,
      kind: 'VirtualMachinePoolVictims',
      metadata: { name: 'runners', namespace: 'ci' },
      policy: 'NewestFirst',
      count: 1,
      victims: [{ name: 'runners-new01' }],
    });
  });

  it('refuses a count that is not an integer from 1 to 1000', async () => {
    const kube = fakeKube({ listVms: () => ok(members) }, p).kube;
    for (const bad of ['0', '1001', '2.5', 'x'])
      expect(await poolVictims(kube, 'ci', 'runners', bad, API)).toMatchObject({ code: 400 });
  });

  it('answers 409 while a member cannot be read (it could be any rank)', async () => {
    const bad = malformedOf(
      'VirtualMachine',
      { metadata: { name: 'runners-bad01', namespace: 'ci' } },
      'spec.runPolicy: Invalid option',
    );
    const kube = fakeKube(
      { listVms: () => ({ ok: true, value: members, malformed: [bad] }) },
      p,
    ).kube;
    expect(await poolVictims(kube, 'ci', 'runners', undefined, API)).toMatchObject({ code: 409 });
  });

  it('answers 404 for a pool that does not exist', async () => {
    expect(await poolVictims(fakeKube().kube, 'ci', 'gone', '1', API)).toMatchObject({
      code: 404,
    });
  });
});
