/**
 * A scripted Kube for unit tests of the executor and the convergence loop: every call is recorded,
 * answered by the test's script when it has one, and otherwise succeeds as the API server would.
 * @module
 */
import type { VirtualMachinePool } from '../../shared/api/index.js';
import type { Failure, FailureReason, Kube, Outcome } from '../../shared/kube/index.js';

/** The HTTP code the API server uses for each failure reason. */
const CODES: Record<FailureReason, number> = {
  notFound: 404,
  conflict: 409,
  alreadyExists: 409,
  invalid: 422,
  forbidden: 403,
  transient: 503,
};

/** A failure of the funnel, as shared/kube returns it. */
export function fail(reason: FailureReason, message = `${reason} (scripted)`): Failure {
  return { ok: false, reason, code: CODES[reason], message };
}

/** A success of the funnel. */
export function ok<T>(value: T): Outcome<T> {
  return { ok: true, value };
}

type Method = Exclude<keyof Kube, 'counts'>;
type Args<M extends Method> = Parameters<Kube[M]>;
type Result<M extends Method> = Awaited<ReturnType<Kube[M]>>;

/** Answers for some calls; a function sees the call's arguments and its index among calls of it. */
export type Script = {
  [M in Method]?: (args: Args<M>, nth: number) => Result<M> | Promise<Result<M>>;
};

/** One recorded call. */
export interface Call {
  readonly method: Method;
  readonly args: readonly unknown[];
}

/** The fake and what it saw. */
export interface FakeKube {
  readonly kube: Kube;
  readonly calls: Call[];
  /** The calls of one method, in order. */
  of(method: Method): Call[];
}

const named = (o: { metadata: { name?: string | undefined } }) => o.metadata.name ?? '';

/** Defaults: creates and updates echo their object (a uid `uid-<name>` on creates), the rest is empty. */
function defaults(pool: VirtualMachinePool | undefined): Required<Script> {
  return {
    getPool: () => (pool === undefined ? fail('notFound') : ok(pool)),
    listPools: () => ok(pool === undefined ? [] : [pool]),
    listVms: () => ok([]),
    listDisks: () => ok([]),
    getVm: ([, name]) => fail('notFound', `virtualmachines "${name}" not found`),
    createVm: ([, vm]) => ok({ ...vm, metadata: { ...vm.metadata, uid: `uid-${named(vm)}` } }),
    createDisk: ([, d]) => ok({ ...d, metadata: { ...d.metadata, uid: `uid-${named(d)}` } }),
    dryRunCreateVm: ([, vm]) => ok({ vm, warnings: [] }),
    updateVm: ([vm]) => ok(vm),
    updateDisk: ([d]) => ok(d),
    updatePool: ([p]) => ok(p),
    updatePoolStatus: ([p]) => ok(p),
    deleteVm: () => ok(undefined),
    deleteDisk: () => ok(undefined),
    recordEvent: () => ok(undefined),
    listClaims: () => ok([]),
    updateClaimStatus: ([c]) => ok(c),
    recordClaimEvent: () => ok(undefined),
    subjectAccessReview: () => ok({ allowed: true }),
    tokenReview: () => ok({ authenticated: false, audiences: [] }),
    getConfigMapData: () => fail('notFound'),
  };
}

/** A fake Kube serving `pool` (when given) and answering by `script`. */
export function fakeKube(script: Script = {}, pool?: VirtualMachinePool): FakeKube {
  const calls: Call[] = [];
  const answer = { ...defaults(pool), ...script } as Record<
    Method,
    (args: unknown[], nth: number) => unknown
  >;
  const kube = new Proxy({} as Kube, {
    get: (_t, prop: string) => {
      if (prop === 'counts') return () => ({});
      const method = prop as Method;
      return (...args: unknown[]) => {
        const nth = calls.filter((c) => c.method === method).length;
        calls.push({ method, args });
        return Promise.resolve(answer[method](args, nth));
      };
    },
  });
  return { kube, calls, of: (m) => calls.filter((c) => c.method === m) };
}

/**
 * A call's arguments without the callbacks a page request may carry (`ahead`): what a test compares
 * of where and how a list was asked for.
 */
export function plainArgs(c: Call): unknown[] {
  return c.args.map((a) =>
    a !== null && typeof a === 'object' && !Array.isArray(a)
      ? Object.fromEntries(Object.entries(a).filter(([, v]) => typeof v !== 'function'))
      : a,
  );
}
