/**
 * `kubectl vmpool claim` and `kubectl vmpool release`: take a member of a pool for a job or a
 * user, wait until one is bound, and give it back.
 * @module
 */
import type { ObjectRef, VirtualMachineClaim } from '../shared/api/index.js';
import {
  CLAIM_API_VERSION,
  CLAIM_GROUP,
  OnRelease,
  VirtualMachineClaim as ClaimModel,
  keys,
  parseWith,
} from '../shared/api/index.js';
import type { Rand } from '../shared/domain/index.js';
import { VM_SUFFIX, canonicalJson, parseDuration, suffix } from '../shared/domain/index.js';
import type { Outcome } from '../shared/kube/index.js';
import type { Ctx } from './context.js';
import { CliError, must, printObject } from './context.js';

/** How kubectl names claims (`kubectl get virtualmachineclaim.vmpool.virtualization.deckhouse.io`). */
export const CLAIM_RESOURCE = `virtualmachineclaim.${CLAIM_GROUP}`;

/** The flags of `claim`. */
export interface ClaimOptions {
  readonly holder?: string;
  readonly ttl?: string;
  readonly onRelease?: string;
  readonly wait: boolean;
  /** A Go duration; only with `wait` (default {@link DEFAULT_TIMEOUT}). */
  readonly timeout?: string;
}

/** How the wait passes time; tests pass a fake one. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** The wall clock. */
export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((ok) => setTimeout(ok, ms)),
};

/** How long `--wait` waits unless `--timeout` says otherwise (as `kubectl wait`'s flag reads). */
export const DEFAULT_TIMEOUT = '5m';

/** How often `--wait` reads the claim: a bind takes a reconcile pass, about a second. */
export const POLL_MS = 1000;

const claimRef = (namespace: string, name: string): ObjectRef => ({
  apiVersion: CLAIM_API_VERSION,
  kind: 'VirtualMachineClaim',
  namespace,
  name,
});

function parseClaim(raw: unknown): VirtualMachineClaim {
  const p = parseWith(ClaimModel, raw);
  if (!p.ok) throw new CliError(`error: the API server returned a malformed claim: ${p.message}`);
  return p.data;
}

/** The `Bound` condition's reason and message, as a Pending claim's why. */
function whyPending(c: VirtualMachineClaim): string {
  const bound = c.status?.conditions?.find((x) => x.type === 'Bound');
  if (bound === undefined) return 'vmpool has not handled it yet (is reconcile-pool running?)';
  return `${bound.reason ?? 'Pending'}${bound.message ? `: ${bound.message}` : ''}`;
}

/** The timeout in ms, or a refusal in kubectl's words for a bad flag. */
function timeoutOf(o: ClaimOptions): number {
  if (o.timeout !== undefined && !o.wait)
    throw new CliError('error: --timeout is only valid with --wait');
  const text = o.timeout ?? DEFAULT_TIMEOUT;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0)
    throw new CliError(
      `error: invalid argument "${text}" for "--timeout" flag: must be a positive Go duration such as 30s or 5m`,
    );
  return ms;
}

/**
 * Creates a claim on `pool` (named `<pool>-<5 random characters>`), and with `--wait` waits until it is Bound:
 * then prints the member's name (the claim's with `-o name`, the claim with `-o json|yaml`).
 */
export async function claim(
  ctx: Ctx,
  pool: string,
  o: ClaimOptions,
  clock: Clock = realClock,
  rand: Rand = Math.random,
): Promise<void> {
  if (o.onRelease !== undefined && !OnRelease.safeParse(o.onRelease).success)
    throw new CliError(
      `error: invalid argument "${o.onRelease}" for "--on-release" flag: must be Delete or Recycle`,
    );
  const timeoutMs = timeoutOf(o);
  const spec = {
    poolName: pool,
    ...(o.holder === undefined ? {} : { holder: o.holder }),
    ...(o.ttl === undefined ? {} : { ttl: o.ttl }),
    ...(o.onRelease === undefined ? {} : { onRelease: o.onRelease }),
  };
  const created = parseClaim(must(await createOnce(ctx, pool, spec, rand)));
  const name = created.metadata.name ?? '';
  if (!o.wait) {
    if (printObject(ctx, created)) return;
    ctx.out(`${CLAIM_RESOURCE}/${name}${ctx.output === 'name' ? '' : ' created'}`);
    return;
  }
  ctx.err(`${CLAIM_RESOURCE}/${name} created, waiting for a member of virtualmachinepool/${pool}`);
  const bound = await waitBound(ctx, name, timeoutMs, clock);
  if (printObject(ctx, bound)) return;
  ctx.out(
    ctx.output === 'name' ? `${CLAIM_RESOURCE}/${name}` : (bound.status?.virtualMachineName ?? ''),
  );
}

/**
 * Creates the claim under a name chosen here rather than by `generateName`: the funnel retries a
 * create whose answer was lost, and with a server-chosen name that retry would make a second claim,
 * holding a second member nobody releases. With ours, the retry meets AlreadyExists and finds the
 * claim it made (same spec).
 */
async function createOnce(
  ctx: Ctx,
  pool: string,
  spec: Record<string, string>,
  rand: Rand,
): Promise<Outcome<unknown>> {
  const name = `${pool}-${suffix(rand, VM_SUFFIX)}`;
  const got = await ctx.raw.create({
    apiVersion: CLAIM_API_VERSION,
    kind: 'VirtualMachineClaim',
    metadata: { name, namespace: ctx.namespace },
    spec,
  });
  if (got.ok || got.reason !== 'alreadyExists') return got;
  const there = await ctx.raw.get(claimRef(ctx.namespace, name));
  const same =
    there.ok && canonicalJson((there.value as { spec?: unknown }).spec) === canonicalJson(spec);
  return same ? there : got;
}

/** Reads the claim until it is Bound; a claim Lost, Expired or gone, or the deadline, is an error. */
async function waitBound(
  ctx: Ctx,
  name: string,
  timeoutMs: number,
  clock: Clock,
): Promise<VirtualMachineClaim> {
  const deadline = clock.now() + timeoutMs;
  const what = `${CLAIM_RESOURCE}/${name}`;
  for (;;) {
    const got = await ctx.raw.get(claimRef(ctx.namespace, name));
    if (!got.ok && got.reason === 'notFound')
      throw new CliError(`error: ${what} was deleted while waiting for a member`);
    const c = parseClaim(must(got));
    const phase = c.status?.phase;
    if (phase === 'Bound' && c.status?.virtualMachineName !== undefined) return c;
    if (phase === 'Lost' || phase === 'Expired')
      throw new CliError(`error: ${what} is ${phase}: ${whyPending(c)}`);
    const left = deadline - clock.now();
    if (left <= 0)
      throw new CliError(
        `error: timed out after ${String(Math.round(timeoutMs / 1000))}s waiting for ${what} to be Bound: still Pending, ${whyPending(c)}. The claim stays and binds once a member is idle; give it up with: kubectl vmpool release ${name}`,
      );
    await clock.sleep(Math.min(POLL_MS, left));
  }
}

/** What releasing `c` does, in the pool's terms (its member's recorded onRelease first). */
async function releaseWhat(ctx: Ctx, c: VirtualMachineClaim): Promise<string> {
  const pool = `virtualmachinepool/${c.spec.poolName}`;
  const vm = c.status?.virtualMachineName;
  switch (c.status?.phase) {
    case 'Expired':
      return 'it had expired, and its member was released then';
    case 'Lost':
      return 'its member was already gone';
    case 'Bound':
      break;
    case 'Pending':
    case undefined:
      return `it held no member yet: ${pool} has nothing to release`;
  }
  const member = vm === undefined ? undefined : await ctx.kube.getVm(ctx.namespace, vm);
  const recorded = OnRelease.safeParse(
    member?.ok === true ? member.value.metadata.annotations?.[keys.onRelease] : undefined,
  );
  let how: OnRelease | undefined = recorded.success ? recorded.data : c.spec.onRelease;
  if (how === undefined) {
    const p = await ctx.kube.getPool(ctx.namespace, c.spec.poolName);
    how = p.ok ? p.value.spec.claims?.onRelease : undefined;
  }
  return how === 'Recycle'
    ? `${pool} takes virtualmachine/${vm ?? ''} back as an idle member (onRelease Recycle)`
    : `${pool} deletes virtualmachine/${vm ?? ''} and refills its idle members (onRelease Delete)`;
}

/** Deletes each named claim (by uid, so a newer claim of the same name is never hit) and says what follows. */
export async function release(ctx: Ctx, names: readonly string[]): Promise<void> {
  if (names.length === 0) throw new CliError('error: name at least one claim to release');
  for (const name of names) {
    const ref = claimRef(ctx.namespace, name);
    const c = parseClaim(must(await ctx.raw.get(ref)));
    const what = await releaseWhat(ctx, c);
    must(await ctx.raw.remove(ref, { uid: c.metadata.uid ?? '' }));
    if (ctx.output === 'name') ctx.out(`${CLAIM_RESOURCE}/${name}`);
    else ctx.out(`${CLAIM_RESOURCE}/${name} deleted: ${what}`);
  }
}
