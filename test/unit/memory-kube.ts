/**
 * An in-memory API server for unit tests of whole reconciles: objects with resourceVersions, creates
 * by name, PUTs conditioned on the resourceVersion sent, deletes with uid and resourceVersion
 * preconditions, and a hook that lets a test play a concurrent writer just before a call lands (a
 * runner protecting itself between the reconcile's read and its delete, say).
 * @module
 */
import type {
  VirtualDisk,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../../shared/api/index.js';
import type { Kube, Outcome, PoolEvent, Preconditions } from '../../shared/kube/index.js';
import { fail, fakeKube, ok } from './fake-kube.js';

type Obj = VirtualMachinePool | VirtualMachine | VirtualDisk | VirtualMachineClaim;
type Kind = 'pool' | 'vm' | 'disk' | 'claim';

/** A call about to land: the test may change the store first (a concurrent writer). */
export interface Landing {
  readonly method:
    'deleteVm' | 'deleteDisk' | 'updateVm' | 'updateDisk' | 'createVm' | 'updateClaimStatus';
  readonly name: string;
}

/** The store and the Kube over it. */
export interface MemoryKube {
  readonly kube: Kube;
  /** Objects by kind and name (the current versions). */
  readonly store: Record<Kind, Map<string, Obj>>;
  /** Every write that took effect, in order (`deleteVm runners-aaaaa`, ...). */
  readonly writes: string[];
  /** Writes refused with 409 because the object changed since it was read. */
  readonly conflicts: string[];
  /** Events recorded on claims, as `<claim> <reason>`. */
  readonly claimEvents: string[];
  /** Replaces an object as another writer would (a new resourceVersion); returns the new version. */
  touch<T extends Obj>(kind: Kind, name: string, change: (o: T) => T): T;
}

const nameOf = (o: Obj): string => o.metadata.name ?? '';

/**
 * Does `o` match a selector of the forms vmpool sends: `key`, `key=value`, and `key in (a,b)` alone
 * (a set term's commas are not term separators)?
 */
function selects(selector: string, o: Obj): boolean {
  const labels = o.metadata.labels ?? {};
  const set = /^([^ ]+) in \(([^)]*)\)$/.exec(selector);
  if (set !== null) {
    const value = labels[set[1] ?? ''];
    return value !== undefined && (set[2] ?? '').split(',').includes(value);
  }
  return selector
    .split(',')
    .filter((s) => s !== '')
    .every((term) => {
      const [k = '', v] = term.split('=');
      return v === undefined ? k in labels : labels[k] === v;
    });
}

/** A Kube over an in-memory store seeded with `objects`; `before` runs before each landing write. */
export function memoryKube(
  seed: {
    pool: VirtualMachinePool;
    vms?: VirtualMachine[];
    disks?: VirtualDisk[];
    claims?: VirtualMachineClaim[];
  },
  before: (l: Landing, m: MemoryKube) => void = () => undefined,
): MemoryKube {
  let rv = 100;
  const next = (): string => String(++rv);
  const stamp = <T extends Obj>(o: T): T => ({
    ...o,
    metadata: { ...o.metadata, resourceVersion: next() },
  });
  const store: Record<Kind, Map<string, Obj>> = {
    pool: new Map([[nameOf(seed.pool), stamp(seed.pool)]]),
    vm: new Map((seed.vms ?? []).map((v) => [nameOf(v), stamp(v)])),
    disk: new Map((seed.disks ?? []).map((d) => [nameOf(d), stamp(d)])),
    claim: new Map((seed.claims ?? []).map((c) => [nameOf(c), stamp(c)])),
  };
  const writes: string[] = [];
  const conflicts: string[] = [];
  const claimEvents: string[] = [];
  const m: MemoryKube = {
    kube: undefined as unknown as Kube,
    store,
    writes,
    conflicts,
    claimEvents,
    touch<T extends Obj>(kind: Kind, name: string, change: (o: T) => T): T {
      const cur = store[kind].get(name) as T | undefined;
      if (cur === undefined) throw new Error(`touch: no ${kind} ${name}`);
      const out = stamp(change(cur));
      store[kind].set(name, out);
      return out;
    },
  };
  const put = <T extends Obj>(kind: Kind, method: Landing['method'] | 'updatePool', o: T) => {
    const name = nameOf(o);
    if (method !== 'updatePool') before({ method, name }, m);
    const cur = store[kind].get(name);
    if (cur === undefined) return fail('notFound');
    if (cur.metadata.resourceVersion !== o.metadata.resourceVersion) {
      conflicts.push(`${method} ${name}`);
      return fail('conflict');
    }
    const out = stamp(o);
    store[kind].set(name, out);
    writes.push(`${method} ${name}`);
    return ok(out);
  };
  const remove = (
    kind: Kind,
    method: 'deleteVm' | 'deleteDisk',
    name: string,
    pre: Preconditions,
  ) => {
    before({ method, name }, m);
    const cur = store[kind].get(name);
    if (cur === undefined) return fail('notFound');
    const stale =
      cur.metadata.uid !== pre.uid ||
      (pre.resourceVersion !== undefined && cur.metadata.resourceVersion !== pre.resourceVersion);
    if (stale) {
      conflicts.push(`${method} ${name}`);
      return fail('conflict');
    }
    store[kind].delete(name);
    writes.push(`${method} ${name}`);
    return ok(undefined);
  };
  const create = <T extends Obj>(kind: Kind, method: 'createVm' | 'createDisk', o: T) => {
    const name = nameOf(o);
    if (method === 'createVm') before({ method, name }, m);
    if (store[kind].has(name)) return fail('alreadyExists');
    const out = stamp({ ...o, metadata: { ...o.metadata, uid: `uid-${name}` } });
    store[kind].set(name, out);
    writes.push(`${method} ${name}`);
    return ok(out as T);
  };
  const list = <T extends Obj>(kind: Kind, selector: string): Outcome<T[]> =>
    ok([...store[kind].values()].filter((o) => selects(selector, o)) as T[]);
  const poolOf = (): VirtualMachinePool => [...store.pool.values()][0] as VirtualMachinePool;
  const f = fakeKube({
    getPool: ([, name]) => {
      const p = store.pool.get(name);
      return p === undefined ? fail('notFound') : ok(p as VirtualMachinePool);
    },
    listPools: () => ok([...store.pool.values()] as VirtualMachinePool[]),
    listVms: ([, sel]) => list<VirtualMachine>('vm', sel),
    listDisks: ([, sel]) => list<VirtualDisk>('disk', sel),
    getVm: ([, name]) => {
      const v = store.vm.get(name);
      return v === undefined ? fail('notFound') : ok(v);
    },
    createVm: ([, vm]) => create('vm', 'createVm', vm),
    createDisk: ([, d]) => create('disk', 'createDisk', d),
    updateVm: ([vm]) => put('vm', 'updateVm', vm),
    updateDisk: ([d]) => put('disk', 'updateDisk', d),
    updatePool: ([p]) => put('pool', 'updatePool', p),
    updatePoolStatus: ([p]) => {
      const cur = poolOf();
      if (cur.metadata.resourceVersion !== p.metadata.resourceVersion) {
        conflicts.push(`updatePoolStatus ${nameOf(p)}`);
        return fail('conflict');
      }
      const out = stamp({ ...cur, status: p.status });
      store.pool.set(nameOf(p), out);
      return ok(out as VirtualMachinePool);
    },
    deleteVm: ([, name, pre]) => remove('vm', 'deleteVm', name, pre),
    deleteDisk: ([, name, pre]) => remove('disk', 'deleteDisk', name, pre),
    listClaims: () => ok([...store.claim.values()] as VirtualMachineClaim[]),
    // The status subresource: only status changes, conditioned on the claim's resourceVersion.
    updateClaimStatus: ([c]) => {
      before({ method: 'updateClaimStatus', name: nameOf(c) }, m);
      const cur = store.claim.get(nameOf(c)) as VirtualMachineClaim | undefined;
      if (cur === undefined) return fail('notFound');
      if (cur.metadata.resourceVersion !== c.metadata.resourceVersion) {
        conflicts.push(`updateClaimStatus ${nameOf(c)}`);
        return fail('conflict');
      }
      const out = stamp({ ...cur, ...(c.status === undefined ? {} : { status: c.status }) });
      store.claim.set(nameOf(c), out);
      writes.push(`updateClaimStatus ${nameOf(c)}`);
      return ok(out);
    },
    recordClaimEvent: ([, claim, ev]: [string, { name: string }, PoolEvent]) => {
      claimEvents.push(`${claim.name} ${ev.reason}`);
      return ok(undefined);
    },
  });
  return Object.assign(m, { kube: f.kube });
}
