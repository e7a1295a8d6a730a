/**
 * One pool's reconcile under the fencing protocol: read, plan, record intent with a write
 * conditioned on the pool's resourceVersion, then execute; re-plan on a lost race.
 * @module
 */
import type { Logger } from 'pino';
import type { PoolStatus, VirtualMachineClaim, VirtualMachinePool } from '../api/index.js';
import type { Observed, Plan, Rand } from '../domain/index.js';
import {
  claimsMayNeed,
  holdBlocked,
  isClaimed,
  plan,
  sameStatus,
  selectorOf,
} from '../domain/index.js';
import type { Failure, Kube, Listed, PageRequest } from '../kube/index.js';
import { blockMalformed, failClosedUnlessPersisted, reportRefused } from './blocked.js';
import { execute } from './execute.js';
import type { ClaimObserver } from './claim-metrics.js';
import { observeClaims } from './claim-metrics.js';
import { settleOrphanClaims } from './orphans.js';
import { planRespectingOutsiders } from './outsiders.js';
import type { OwnWrites, TrackedWrites } from './own-writes.js';

/** Everything a reconcile needs from outside: the API server, the clock and randomness. */
export interface ReconcileDeps {
  readonly kube: Kube;
  readonly now: () => Date;
  readonly rand: Rand;
  readonly log: Logger;
  /** Passes that lost a race or failed before giving up (the event is then redelivered); default 6. */
  readonly maxPasses?: number;
  /** Passes that acted without a hitch (a burst of creates, say) on top of those; default 100. */
  readonly maxBursts?: number;
  /** Most creates one pass records (default the domain's CREATE_BURST; tests make it small). */
  readonly createBurst?: number;
  /** Sleep between passes after a lost race (jittered); injectable for tests. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Where claims by phase, idle members and claim-to-Bound times are reported (metrics). */
  readonly claims?: ClaimObserver;
  /** Pools per window of a scope-wide reconcile (default `WINDOW`; tests cross pages with less). */
  readonly window?: number;
  /** Where the writes a later pass read past are remembered, so their events need no reconcile. */
  readonly ownWrites?: OwnWrites;
}

/** The result of reconciling one pool. */
export type ReconcileOutcome =
  /** Nothing left to do (possibly after acting); a drain deadline ahead says when to look again. */
  | {
      readonly kind: 'converged';
      readonly passes: number;
      readonly actions: number;
      readonly recheckAt?: Date;
    }
  /** The pool does not exist (any more). */
  | { readonly kind: 'gone' }
  /** Races or transient errors outlasted the passes: deliver the event again. */
  | { readonly kind: 'retry'; readonly reason: string }
  /** The API server refuses what the pool asks for (for example an invalid template). */
  | { readonly kind: 'failed'; readonly failures: Failure[] };

/**
 * The status a plan has vmpool write, or undefined when none is due: the fence before actions, or
 * a status that differs from the stored one (a held Blocked condition kept while nothing acts).
 */
export function statusToWrite(pool: VirtualMachinePool, p: Plan): PoolStatus | undefined {
  const status = holdBlocked(pool.status, p.status, p.actions.length > 0);
  return p.fenced || (p.writeStatus && !sameStatus(pool.status, status)) ? status : undefined;
}

/** A converged outcome, with the plan's recheck time when it has one. */
export function converged(passes: number, actions: number, recheckAt?: Date): ReconcileOutcome {
  return recheckAt === undefined
    ? { kind: 'converged', passes, actions }
    : { kind: 'converged', passes, actions, recheckAt };
}

const defaultSleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** What started a reconcile, as far as it changes what the reconcile reads. */
export interface Cause {
  /**
   * A claim's event (or a caller that cannot tell): the claims are read whatever the pool's status
   * says. Otherwise they are read only when {@link claimsMayNeed} the pool or a member is marked.
   */
  readonly claims: boolean;
}

/** The cause of a reconcile whose caller does not know it: everything is read. */
export const ANY_CAUSE: Cause = { claims: true };

/** The cause that reads all either of `a` and `b` reads (of coalesced deliveries). */
export function widerCause(a: Cause, b: Cause): Cause {
  return { claims: a.claims || b.claims };
}

/** Claims not read: the pool's status says none concerns it (see {@link Cause}). */
const NOT_READ: Listed<VirtualMachineClaim> = { ok: true, value: [], malformed: [] };

/**
 * The claims of a namespace (or the cluster). A cluster without the claim CRD (404) has no claims;
 * any other failure is returned: planning without the claims would release every claimed member.
 */
export async function claimsOf(
  kube: Kube,
  namespace: string | undefined,
  page?: PageRequest,
): Promise<Listed<VirtualMachineClaim>> {
  const got = await kube.listClaims(namespace, page);
  return !got.ok && got.reason === 'notFound' ? { ok: true, value: [], malformed: [] } : got;
}

/**
 * Whether the pool, as the last status write left it, asks for nothing more from what this pass
 * read: planned again, no action and no other status. Its event then needs no reconcile.
 */
function settles(observed: Observed, pool: VirtualMachinePool, deps: ReconcileDeps): boolean {
  const again = plan({ ...observed, pool }, deps.now(), deps.rand);
  return again.actions.length === 0 && statusToWrite(pool, again) === undefined;
}

/** Converges one pool; safe to run concurrently with itself anywhere. */
export async function reconcilePool(
  deps: ReconcileDeps,
  namespace: string,
  name: string,
  cause: Cause = ANY_CAUSE,
): Promise<ReconcileOutcome> {
  const writes = deps.ownWrites?.track(deps.kube);
  try {
    return await passes(deps, { namespace, name, cause }, writes);
  } finally {
    writes?.end();
  }
}

async function passes(
  deps: ReconcileDeps,
  { namespace, name, cause }: { namespace: string; name: string; cause: Cause },
  writes: TrackedWrites | undefined,
): Promise<ReconcileOutcome> {
  const { kube, log } = deps;
  // Once read, the claims are read by every later pass: a retried claim write is not forgotten.
  let readClaims = cause.claims;
  const sleep = deps.sleep ?? defaultSleep;
  const maxPasses = deps.maxPasses ?? 6;
  const maxBursts = deps.maxBursts ?? 100;
  let bursts = 0;
  let actions = 0;
  let reason = '';
  const foreign = new Set<string>();
  const writer = writes?.kube ?? kube;
  // A pass that acted without a hitch is progress, not a lost race: a large scale-up goes burst by
  // burst (each recorded by a pass that read the current desire) without using up the retries.
  for (let pass = 1; pass <= maxPasses + bursts; pass++) {
    if (pass > 1 && reason !== '')
      await sleep(Math.floor(deps.rand() * 50 * 2 ** Math.min(pass, 5)));
    // Every write of the passes before is done: the reads below see it or something newer.
    const readPast = writes?.readsBegin();
    const got = await kube.getPool(namespace, name);
    if (!got.ok) {
      if (got.reason === 'notFound') {
        deps.claims?.gone(namespace, name);
        await settleOrphanClaims(deps, namespace, name);
        return { kind: 'gone' };
      }
      // A missing grant, or a pool its model cannot read, does not heal by retrying: say so once
      // instead of redelivering forever (the fix is a write, and brings its own event).
      if (got.reason === 'forbidden' || got.reason === 'invalid')
        return { kind: 'failed', failures: [got] };
      reason = got.message;
      continue;
    }
    let pool = got.value;
    const selector = selectorOf(pool);
    readClaims ||= claimsMayNeed(pool);
    const [vms, disks, listed] = await Promise.all([
      kube.listVms(namespace, selector),
      kube.listDisks(namespace, selector),
      readClaims ? claimsOf(kube, namespace) : NOT_READ,
    ]);
    // A member marked after the status was written (a concurrent bind) is planned with its claim:
    // without it, the member would look released.
    const late = listed === NOT_READ && vms.ok && disks.ok && vms.value.some(isClaimed);
    const claims = late ? await claimsOf(kube, namespace) : listed;
    readClaims ||= late;
    if (!vms.ok || !disks.ok || !claims.ok) {
      const f = !vms.ok ? vms : !disks.ok ? disks : (claims as Failure);
      if (f.reason === 'forbidden') return reportRefused(deps, pool, [f]);
      reason = f.message;
      continue;
    }
    readPast?.();
    // Listed by this pool's label: every object that did not parse claims it.
    const unseen = [...(vms.malformed ?? []), ...(disks.malformed ?? [])];
    if (unseen.length > 0) return blockMalformed(deps, pool, unseen);
    const burst = deps.createBurst === undefined ? {} : { burst: deps.createBurst };
    // A claim that does not parse keeps its member as it is (never released for a claim unseen);
    // the funnel reports it once per object version (onMalformed), not once per pass.
    const unreadableClaims = (claims.malformed ?? []).map((m) => m.uid);
    const observed = {
      pool,
      vms: vms.value,
      disks: disks.value,
      claims: claims.value,
      unreadableClaims,
      foreign,
      ...burst,
    };
    const planned = await planRespectingOutsiders(kube, observed, deps.now(), deps.rand);
    if (!planned.ok) {
      if (planned.reason === 'forbidden') return reportRefused(deps, pool, [planned]);
      reason = planned.message;
      continue;
    }
    if (!('value' in planned)) return blockMalformed(deps, pool, planned.unseen);
    const p = planned.value;
    for (const w of p.warnings) log.warn({ pool: `${namespace}/${name}` }, w);
    const status = statusToWrite(pool, p);
    if (status !== undefined) {
      const wrote = await writer.updatePoolStatus({ ...pool, status });
      if (!wrote.ok) {
        if (wrote.reason === 'notFound') return { kind: 'gone' };
        if (wrote.reason === 'invalid' || wrote.reason === 'forbidden')
          return { kind: 'failed', failures: [wrote] };
        reason = `status write: ${wrote.message}`;
        continue;
      }
      pool = wrote.value;
      // Fail closed: a served schema that prunes status.intent (the platform's own pool CRD) would
      // let the write succeed and record nothing.
      const closed = await failClosedUnlessPersisted(deps, pool, status);
      if (closed !== undefined) return closed;
      await Promise.all(p.events.map((e) => kube.recordEvent(pool, e)));
    }
    const read = claims === NOT_READ ? undefined : claims.value;
    const bound = observeClaims(deps.claims, pool, read, p);
    if (p.actions.length === 0) {
      if (status !== undefined && writes !== undefined && settles(observed, pool, deps))
        writes.settled();
      return converged(pass, actions, p.recheckAt);
    }
    const ex = await execute(writer, pool, p.batches, log, bound);
    actions += ex.done;
    for (const n of ex.foreign) foreign.add(n);
    // A 403 stops the pass even when other actions could be retried: a grant does not appear by itself.
    if (ex.failed.length > 0 && (!ex.retry || ex.failed.some((f) => f.reason === 'forbidden')))
      return reportRefused(deps, pool, ex.failed);
    reason = ex.retry ? 'an action lost a race or failed transiently' : '';
    if (!ex.retry && ex.done > 0 && bursts < maxBursts) bursts++;
  }
  return { kind: 'retry', reason: reason || 'still acting after the last pass' };
}
