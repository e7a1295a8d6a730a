/**
 * Which reconciles read the claims, against the real API server and the served CRDs, with the
 * deployed identity: the pool's CRD keeps `status.pendingClaims`, so a reconcile started by the
 * pool's or a member's event skips the claims' list while no claim waits or is bound; a claim whose
 * event was lost is read by the resync tick's window, recorded as waiting, and from then on every
 * reconcile of the pool reads the claims again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../shared/api/index.js';
import { CLAIM_API_VERSION, CLAIM_GROUP, CLAIM_VERSION } from '../../shared/api/index.js';
import type { Kube } from '../../shared/kube/index.js';
import { reconcilePool, reconcileScope } from '../../shared/reconcile/index.js';
import { smallPool } from '../../local/guide.js';
import { testLog } from '../logs.js';
import { countingCalls } from '../kube-calls.js';
import { cluster, create, dropNamespace, functionKube, newNamespace, read } from './harness.js';

let ns = '';
let kube: Kube;
let claimLists: () => number = () => 0;

beforeAll(async () => {
  // The deployed client, with its claim lists counted.
  const counted = countingCalls(await functionKube('reconcile-pool'), 'listClaims');
  kube = counted.kube;
  claimLists = counted.calls;
  ns = await newNamespace('claimsread');
});
afterAll(async () => {
  await dropNamespace(ns);
});

const deps = () => ({
  kube,
  now: () => new Date(),
  rand: Math.random,
  log: testLog('claims-read'),
});
const NOT_A_CLAIM = { claims: false } as const;

async function status(): Promise<NonNullable<VirtualMachinePool['status']>> {
  const p = (await read('virtualmachinepools', ns, 'runners')) as VirtualMachinePool | undefined;
  return p?.status ?? {};
}

/** Claim lists made by `run`. */
async function listsOf(run: () => Promise<unknown>): Promise<number> {
  const before = claimLists();
  await run();
  return claimLists() - before;
}

describe('which reconciles read the claims, as deployed', () => {
  it("a pool no claim touches: its status keeps pendingClaims 0, and a member's event reads no claims", async () => {
    const p = smallPool(ns, 'runners', (x) => (x.spec.replicas = 1));
    await create('virtualmachinepools', ns, {
      ...p,
      spec: { ...p.spec, claims: { minIdle: 0, maxReplicas: 2 } },
    });
    expect(await reconcilePool(deps(), ns, 'runners')).toMatchObject({ kind: 'converged' });
    // Read back from the API server: the served schema did not prune the counts.
    expect(await status()).toMatchObject({ pendingClaims: 0, claimedReplicas: 0 });
    const lists = await listsOf(async () => {
      const out = await reconcilePool(deps(), ns, 'runners', NOT_A_CLAIM);
      expect(out).toMatchObject({ kind: 'converged', actions: 0 });
    });
    expect(lists).toBe(0);
    // A claim's event reads them.
    expect(await listsOf(() => reconcilePool(deps(), ns, 'runners', { claims: true }))).toBe(1);
  });

  it('a claim whose event was lost: the resync tick reads it, records it waiting, and then every reconcile reads the claims', async () => {
    await cluster().custom.createNamespacedCustomObject({
      group: CLAIM_GROUP,
      version: CLAIM_VERSION,
      plural: 'virtualmachineclaims',
      namespace: ns,
      body: {
        apiVersion: CLAIM_API_VERSION,
        kind: 'VirtualMachineClaim',
        metadata: { name: 'job-1' },
        spec: { poolName: 'runners', holder: 'job-1' },
      },
    });
    // A member's event does not see it: nothing changes.
    await reconcilePool(deps(), ns, 'runners', NOT_A_CLAIM);
    expect(await status()).toMatchObject({ pendingClaims: 0 });
    // The tick's window lists the claims: no member is Ready here (no platform runs), so the claim
    // waits for the one member there is (the pool runs max(replicas, claimed + waiting) = 1).
    const out = await reconcileScope(deps(), { kind: 'namespace', namespace: ns });
    expect(out.map((o) => o.outcome.kind)).toEqual(['converged']);
    expect(await status()).toMatchObject({ pendingClaims: 1, replicas: 1 });
    const claim = (await cluster().custom.getNamespacedCustomObject({
      group: CLAIM_GROUP,
      version: CLAIM_VERSION,
      plural: 'virtualmachineclaims',
      namespace: ns,
      name: 'job-1',
    })) as { status?: { phase?: string } };
    expect(claim.status?.phase).toBe('Pending');
    // Now a member's event reads them too: it is the one that may free a member for the claim.
    expect(await listsOf(() => reconcilePool(deps(), ns, 'runners', NOT_A_CLAIM))).toBe(1);
  });
});
