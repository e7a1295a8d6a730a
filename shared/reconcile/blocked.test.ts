/**
 * Failing closed in the reconcile loop, against an in-memory API server whose pool schema can prune
 * `status.intent` (as the platform's own pool CRD does) and which can refuse creates with 403. The
 * same behaviours run for real in test/e2e/platform-pool.test.ts and test/e2e/rbac.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { PoolEvent } from '../kube/index.js';
import type { Kube, Outcome } from '../kube/index.js';
import type { VirtualMachine, VirtualMachinePool } from '../api/index.js';
import { FORBIDDEN, INTENT_NOT_PERSISTED, blockingCondition } from '../domain/index.js';
import { NOW, pool, seededRandom } from '../../test/unit/builders.js';
import { testLog } from '../../test/logs.js';
import { reconcilePool } from './converge.js';

interface Server {
  kube: Kube;
  stored: () => VirtualMachinePool;
  events: PoolEvent[];
  statusWrites: () => number;
  creates: () => number;
}

/** One pool in memory; `prune` drops status.intent on write, `refuseCreates` answers 403. */
function server(o: { prune?: boolean; refuseCreates?: boolean; quota?: boolean }): Server {
  let current = pool({ replicas: 2, virtualDiskTemplates: [] });
  let rv = 100;
  let writes = 0;
  let creates = 0;
  const vms: VirtualMachine[] = [];
  const events: PoolEvent[] = [];
  const ok = <T>(value: T): Promise<Outcome<T>> => Promise.resolve({ ok: true, value });
  const unexpected = new Proxy({} as Kube, {
    get: (_t, prop) => () => {
      throw new Error(`unexpected call ${String(prop)}`);
    },
  });
  const kube: Kube = {
    ...unexpected,
    getPool: () => ok(structuredClone(current)),
    listVms: () => ok(structuredClone(vms)),
    listDisks: () => ok([]),
    listClaims: () => ok([]),
    updatePoolStatus(p) {
      writes++;
      if (p.metadata.resourceVersion !== current.metadata.resourceVersion)
        return Promise.resolve({ ok: false, reason: 'conflict', code: 409, message: 'stale' });
      const status = structuredClone(p.status ?? {});
      if (o.prune === true) delete status.intent;
      const changed = JSON.stringify(status) !== JSON.stringify(current.status ?? {});
      current = {
        ...current,
        status,
        metadata: { ...current.metadata, resourceVersion: String(changed ? ++rv : rv) },
      };
      return ok(structuredClone(current));
    },
    createVm(_ns, vm) {
      creates++;
      if (o.refuseCreates === true)
        return Promise.resolve({
          ok: false,
          reason: 'forbidden',
          code: 403,
          message:
            o.quota === true
              ? `virtualmachines "${vm.metadata.name ?? ''}" is forbidden: exceeded quota: vms, requested: count/virtualmachines.virtualization.deckhouse.io=1, used: 2, limited: 2`
              : `virtualmachines "${vm.metadata.name ?? ''}" is forbidden: cannot set blockOwnerDeletion`,
        });
      const stored = { ...vm, metadata: { ...vm.metadata, uid: `uid-${vms.length}` } };
      vms.push(stored);
      return ok(stored);
    },
    recordEvent(_p, e) {
      events.push(e);
      return ok(undefined);
    },
  };
  return {
    kube,
    stored: () => current,
    events,
    statusWrites: () => writes,
    creates: () => creates,
  };
}

const deps = (kube: Kube) => ({
  kube,
  now: () => NOW,
  rand: seededRandom(3),
  log: testLog('reconcile'),
  sleep: () => Promise.resolve(),
});

describe('reconcilePool fails closed when intent does not persist', () => {
  it('creates nothing, sets Synced=False IntentNotPersisted and records one Warning', async () => {
    const s = server({ prune: true });
    const out = await reconcilePool(deps(s.kube), 'ci', 'runners');
    expect(out.kind).toBe('failed');
    expect(s.creates()).toBe(0);
    const c = blockingCondition(s.stored().status);
    expect(c?.reason).toBe(INTENT_NOT_PERSISTED);
    expect(c?.message).toContain('prunes it');
    expect(c?.message).toContain('--take-over');
    expect(s.events.map((e) => `${e.type} ${e.reason}`)).toEqual([
      `Warning ${INTENT_NOT_PERSISTED}`,
    ]);
  });

  it('settles: the next reconcile changes nothing and repeats no Event', async () => {
    const s = server({ prune: true });
    await reconcilePool(deps(s.kube), 'ci', 'runners');
    const rv = s.stored().metadata.resourceVersion;
    const out = await reconcilePool(deps(s.kube), 'ci', 'runners');
    expect(out.kind).toBe('failed');
    expect(s.creates()).toBe(0);
    expect(s.stored().metadata.resourceVersion).toBe(rv);
    expect(s.events).toHaveLength(1);
  });

  it('acts as usual where the schema keeps the intent', async () => {
    const s = server({});
    const out = await reconcilePool(deps(s.kube), 'ci', 'runners');
    expect(s.creates()).toBe(2);
    expect(out.kind).toBe('converged');
    expect(blockingCondition(s.stored().status)).toBeUndefined();
  });
});

describe('reconcilePool on a 403', () => {
  it('stops after the first pass with Synced=False Forbidden instead of retrying', async () => {
    const s = server({ refuseCreates: true });
    const out = await reconcilePool(deps(s.kube), 'ci', 'runners');
    expect(out.kind).toBe('failed');
    // The slow start stops creating at the first refusal.
    expect(s.creates()).toBe(1);
    const c = blockingCondition(s.stored().status);
    expect(c?.reason).toBe(FORBIDDEN);
    expect(c?.message).toContain('cannot set blockOwnerDeletion');
    expect(c?.message).toContain('knative/base/rbac.yaml');
    expect(s.events.filter((e) => e.reason === FORBIDDEN)).toHaveLength(1);
    // Intent stays recorded: the creates are still fenced when the grant comes back.
    expect(s.stored().status?.intent?.creates).toHaveLength(2);
  });

  it('settles while refused: no status write changes the pool, no second Forbidden Event', async () => {
    const s = server({ refuseCreates: true });
    await reconcilePool(deps(s.kube), 'ci', 'runners');
    const rv = s.stored().metadata.resourceVersion;
    await reconcilePool(deps(s.kube), 'ci', 'runners');
    expect(s.stored().metadata.resourceVersion).toBe(rv);
    expect(s.events.filter((e) => e.reason === FORBIDDEN)).toHaveLength(1);
  });

  it('a 403 of admission (a quota) is a failure of the object, not a missing grant: no Forbidden', async () => {
    const s = server({ refuseCreates: true, quota: true });
    const out = await reconcilePool(deps(s.kube), 'ci', 'runners');
    expect(out.kind).toBe('failed');
    expect(blockingCondition(s.stored().status)).toBeUndefined();
    expect(s.events.filter((e) => e.reason === FORBIDDEN)).toEqual([]);
  });
});
