/**
 * The {@link Kube} implementation: the only code that talks to the API server.
 * @module
 */
import { z } from 'zod';
import type { Malformed } from '../api/index.js';
import {
  API_VERSION,
  CLAIM_API_VERSION,
  CLAIM_GROUP,
  CLAIM_VERSION,
  GROUP,
  firstIssue,
  malformedOf,
  VERSION,
  VirtualDisk,
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../api/index.js';
import { activeBudget } from './budget.js';
import type { ActiveBudget } from './budget.js';
import { RequestTally } from './counts.js';
import type { RequestHook, RequestOutcome, Verb } from './counts.js';
import { defaultReportingInstance, eventBody, poolEventBody } from './event.js';
import { NO_HTTP_STATUS, classify, failure, refusal } from './failure.js';
import { backoffMs, defaultRetryPolicy, sleep } from './retry.js';
import type { RetryPolicy } from './retry.js';
import { createSend, query } from './transport.js';
import { withoutManagedFields } from './lean.js';
import type { Credentials, HttpAnswer, HttpCall } from './transport.js';
import { warningTexts } from './warnings.js';
import type {
  AccessDecision,
  AccessQuestion,
  ClaimEventTarget,
  DryRun,
  EventPool,
  Failure,
  Kube,
  Listed,
  Outcome,
  PageRequest,
  PoolEvent,
  Preconditions,
  TokenIdentity,
} from './types.js';

/** The status of a TokenReview answer (the fields vmpool reads). */
const TokenReviewStatus = z.looseObject({
  authenticated: z.boolean().optional(),
  audiences: z.array(z.string()).optional(),
  error: z.string().optional(),
  user: z
    .looseObject({
      username: z.string().optional(),
      uid: z.string().optional(),
      groups: z.array(z.string()).optional(),
      extra: z.record(z.string(), z.array(z.string())).optional(),
    })
    .optional(),
});

/** Options of {@link createKube}; all have production defaults, tests override the clock and dice. */
export interface KubeOptions {
  /** Per-request timeout in ms (default 15 000); a timeout is `transient`. */
  readonly timeoutMs?: number;
  /** Retry policy of transient failures. */
  readonly retry?: Partial<RetryPolicy>;
  /** `reportingInstance` of Events (default `vmpool-$POD_NAME`/hostname). */
  readonly reportingInstance?: string;
  /** `fieldManager` of creates and updates (default `vmpool`). */
  readonly fieldManager?: string;
  /** Page size of lists (default 500). */
  readonly pageSize?: number;
  /** Called after every HTTP request, retries included. */
  readonly onRequest?: RequestHook;
  /** Sleeps between retries (tests make it instant). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Uniform [0, 1) for jitter. */
  readonly random?: () => number;
  /**
   * Told of a list item its model refused, once per object version (uid and resourceVersion) for
   * the life of the funnel, however many lists return it: the runtime logs it.
   */
  readonly onMalformed?: (item: Malformed) => void;
}

/** Object versions remembered as already reported malformed (a bound, not a working set). */
const MALFORMED_MEMORY = 1024;

type Plural = 'virtualmachinepools' | 'virtualmachines' | 'virtualdisks' | 'virtualmachineclaims';

const KINDS: Record<Plural, string> = {
  virtualmachinepools: 'VirtualMachinePool',
  virtualmachines: 'VirtualMachine',
  virtualdisks: 'VirtualDisk',
  virtualmachineclaims: 'VirtualMachineClaim',
};

const POOLS: Plural = 'virtualmachinepools';
const VMS: Plural = 'virtualmachines';
const DISKS: Plural = 'virtualdisks';
/** Claims live in vmpool's own group, whatever group pools are served in. */
const CLAIMS: Plural = 'virtualmachineclaims';

/** A request's signal, and what stops its timer once the request has settled. */
interface TimedSignal {
  readonly signal: AbortSignal;
  readonly done: () => void;
}

/**
 * The signal of one request: its timeout, shortened by its {@link CallBudget} (the deadline, the
 * budget's own timeout) and joined with the budget's signal. An aborted request is `transient`.
 * `done` stops its timer once the request has settled.
 */
function requestSignal(ms: number): TimedSignal {
  const budget = activeBudget();
  let t = budget?.timeoutMs === undefined ? ms : Math.min(ms, budget.timeoutMs);
  if (budget?.deadline !== undefined)
    t = Math.max(1, Math.min(t, Math.ceil(budget.deadline - performance.now())));
  const timeout = timeoutSignal(t);
  const signal =
    budget?.signal === undefined
      ? timeout.signal
      : AbortSignal.any([timeout.signal, budget.signal]);
  return { signal, done: timeout.done };
}

/**
 * A signal that aborts after `ms`, held by its own timer. Node 20's `AbortSignal.timeout` is held
 * only weakly by its timer, and `AbortSignal.any` holds its sources weakly too: a garbage
 * collection before the timeout dropped it, and the request then ran on until the caller left (an
 * admission review answered at kube-apiserver's 10 s instead of its own 6 s).
 */
function timeoutSignal(ms: number): TimedSignal {
  const control = new AbortController();
  const timer = setTimeout(() => {
    control.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, ms);
  timer.unref();
  return {
    signal: control.signal,
    done: () => {
      clearTimeout(timer);
    },
  };
}

/**
 * The failure of a call its budget no longer allows: the caller went away, or its deadline passed
 * (`last` is the error of the attempt that ran out of time). Transient: a later request may succeed.
 */
function overBudget(
  budget: ActiveBudget | undefined,
  last?: string,
  nextAt: number = performance.now(),
): Failure | undefined {
  if (budget === undefined) return undefined;
  const why = last === undefined ? '' : ` (${last})`;
  if (budget.signal?.aborted === true)
    return failure('transient', NO_HTTP_STATUS, `the request was cancelled${why}`);
  if (budget.deadline !== undefined && nextAt >= budget.deadline - 1) {
    const total = budget.totalMs === undefined ? '' : ` within ${String(budget.totalMs)} ms`;
    return failure('transient', NO_HTTP_STATUS, `the API server did not answer${total}${why}`);
  }
  return undefined;
}

function outcomeOf(o: Outcome<unknown>): RequestOutcome {
  return o.ok ? 'ok' : o.reason;
}

/** Parses a response with a model; a mismatch is `invalid`, never a half-parsed object. */
function parseWith<T>(model: z.ZodType<T>, what: string, raw: unknown): Outcome<T> {
  const r = model.safeParse(raw);
  if (r.success) return { ok: true, value: r.data };
  const first = r.error.issues[0];
  const where =
    first === undefined ? '' : ` at ${first.path.join('.') || '<root>'}: ${first.message}`;
  return failure('invalid', NO_HTTP_STATUS, `API server returned a malformed ${what}${where}`);
}

function itemsOf(raw: unknown): { items: unknown[]; next: string | undefined } | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as { items?: unknown; metadata?: { continue?: unknown } };
  if (!Array.isArray(r.items)) return undefined;
  const next = r.metadata?.continue;
  return { items: r.items, next: typeof next === 'string' && next !== '' ? next : undefined };
}

/** How far from its end a list's body is searched for its continue token. */
const TAIL = 2000;

/**
 * The last `"continue":"<token>"` in the tail of a list's body, if any: a guess at the list's token
 * before the body is parsed (a continue token is base64, with no quote or escape in it).
 */
export function lastContinue(text: string): string | undefined {
  let token: string | undefined;
  for (const m of text.slice(-TAIL).matchAll(/"continue":"([^"\\]+)"/g)) token = m[1];
  return token;
}

/**
 * Creates the Kube funnel.
 *
 * Retries: every transient failure (429, 5xx, network, timeout) is retried within the policy, creates
 * included. A create that timed out may have landed; its retry then answers `alreadyExists`, which
 * callers already treat as done because every name is fixed. A retried PUT that landed answers
 * `conflict` (its resourceVersion is now stale) and a retried delete `notFound`, both of which callers
 * handle by re-reading, so no retry can double an effect. Conflicts and all other failures are never
 * retried here: they need a fresh read and a new plan. Events are best effort: one attempt, no retry.
 *
 * @param kc where and as whom to connect
 * @param opts timeouts, retry policy, hooks
 */
export function createKube(kc: Credentials, opts: KubeOptions = {}): Kube {
  const send = createSend(kc);
  const policy: RetryPolicy = { ...defaultRetryPolicy, ...opts.retry };
  const pause = opts.sleep ?? sleep;
  const random = opts.random ?? Math.random;
  const fieldManager = opts.fieldManager ?? 'vmpool';
  const pageSize = opts.pageSize ?? 500;
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const reportingInstance = opts.reportingInstance ?? defaultReportingInstance();
  const tally = new RequestTally();

  /** One HTTP request, classified, counted and reported; `parse` sees 2xx bodies (JSON) only. */
  async function once<T>(
    verb: Verb,
    req: HttpCall,
    parse: (raw: unknown, answer: HttpAnswer) => Outcome<T>,
    read?: (text: string) => void,
    prepare?: (text: string) => string,
  ): Promise<{ outcome: Outcome<T>; retryAfterMs?: number }> {
    const started = performance.now();
    let result: { outcome: Outcome<T>; retryAfterMs?: number };
    const timeout = requestSignal(timeoutMs);
    try {
      const answer = await send({ ...req, signal: timeout.signal });
      if (answer.status >= 200 && answer.status < 300) {
        read?.(answer.text);
        result = { outcome: parseBody(answer, parse, prepare) };
      } else {
        const r = refusal(answer.status, answer.headers, answer.text);
        result =
          r.retryAfterMs === undefined
            ? { outcome: r.failure }
            : { outcome: r.failure, retryAfterMs: r.retryAfterMs };
      }
    } catch (err) {
      result = { outcome: classify(err).failure };
    } finally {
      timeout.done();
    }
    tally.add(verb, outcomeOf(result.outcome));
    opts.onRequest?.(verb, outcomeOf(result.outcome), (performance.now() - started) / 1000);
    return result;
  }

  /**
   * {@link once}, retried while transient and attempts remain, within the request's budget: nothing
   * is sent once its signal aborted or its deadline passed, and no retry waits past the deadline.
   */
  async function call<T>(
    verb: Verb,
    req: HttpCall,
    parse: (raw: unknown, answer: HttpAnswer) => Outcome<T>,
    attempts: number = policy.attempts,
    read?: (text: string) => void,
    prepare?: (text: string) => string,
  ): Promise<Outcome<T>> {
    const budget = activeBudget();
    const limit = Math.min(attempts, budget?.attempts ?? attempts);
    for (let attempt = 1; ; attempt++) {
      const spent = overBudget(budget);
      if (spent !== undefined) return spent;
      const r = await once(verb, req, parse, read, prepare);
      if (r.outcome.ok || r.outcome.reason !== 'transient') return r.outcome;
      const wait = backoffMs(policy, attempt - 1, random, r.retryAfterMs);
      const stop = overBudget(budget, r.outcome.message, performance.now() + wait);
      if (stop !== undefined) return stop;
      if (attempt >= limit) return r.outcome;
      await pause(wait);
    }
  }

  const path = (plural: Plural, namespace?: string, name?: string, sub?: string): string =>
    `/apis/${plural === CLAIMS ? `${CLAIM_GROUP}/${CLAIM_VERSION}` : `${GROUP}/${VERSION}`}${namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`}/${plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}${sub === undefined ? '' : `/${sub}`}`;

  function get<T>(
    plural: Plural,
    model: z.ZodType<T>,
    namespace: string,
    name: string,
    resourceVersion?: string,
  ) {
    const q = query({ resourceVersion });
    return call('get', { method: 'GET', path: `${path(plural, namespace, name)}${q}` }, (raw) =>
      parseWith(model, plural.slice(0, -1), raw),
    );
  }

  const reported = new Set<string>();
  /** Tells `onMalformed` of an item once per object version. */
  function report(m: Malformed): void {
    const key = `${m.kind}/${m.namespace}/${m.name}/${m.uid}/${m.resourceVersion}`;
    if (reported.has(key)) return;
    if (reported.size >= MALFORMED_MEMORY) reported.clear();
    reported.add(key);
    opts.onMalformed?.(m);
  }

  /**
   * A consistent (quorum) list: no resourceVersion, pages chained with `continue` (or only the page
   * `page` asks for, unless it asks for `all`). Items are parsed one by one; one its model refuses
   * is skipped and named in `malformed`, not fatal to the list.
   */
  async function list<T>(
    plural: Plural,
    model: z.ZodType<T>,
    namespace: string | undefined,
    labelSelector?: string,
    page?: PageRequest,
  ): Promise<Listed<T>> {
    const out: T[] = [];
    const malformed: Malformed[] = [];
    let cont = page?.continue;
    const ahead = page?.all === true ? undefined : page?.ahead;
    // The token from the body's tail, before the body is parsed: where the server writes a list's
    // metadata after its items (custom resources, keys in order), the next page can be asked for
    // while this one is parsed. A caller checks it against the parsed one ({@link PageRequest.ahead}).
    const early =
      ahead === undefined
        ? undefined
        : (text: string): void => {
            const token = lastContinue(text);
            if (token !== undefined) ahead(token);
          };
    do {
      const q = query({ labelSelector, limit: page?.limit ?? pageSize, continue: cont });
      const r = await call(
        'list',
        { method: 'GET', path: `${path(plural, namespace)}${q}` },
        (raw): Outcome<{ items: unknown[]; next: string | undefined }> => {
          const l = itemsOf(raw);
          if (l !== undefined) return { ok: true, value: l };
          return failure(
            'invalid',
            NO_HTTP_STATUS,
            `API server returned a malformed ${plural} list`,
          );
        },
        policy.attempts,
        early,
        page?.lean === true ? withoutManagedFields : undefined,
      );
      if (!r.ok) return r;
      if (r.value.next !== undefined && page?.all !== true) page?.ahead?.(r.value.next);
      for (const item of r.value.items) {
        const p = model.safeParse(item);
        if (p.success) out.push(p.data);
        else malformed.push(malformedOf(KINDS[plural], item, firstIssue(p.error)));
      }
      cont = r.value.next;
    } while (cont !== undefined && (page === undefined || page.all === true));
    for (const m of malformed) report(m);
    return cont === undefined
      ? { ok: true, value: out, malformed }
      : { ok: true, value: out, malformed, next: cont };
  }

  function create<T extends object>(
    plural: Plural,
    kind: string,
    model: z.ZodType<T>,
    namespace: string,
    obj: T & { apiVersion?: string; kind?: string },
  ) {
    const body = { ...obj, apiVersion: obj.apiVersion ?? API_VERSION, kind: obj.kind ?? kind };
    return call(
      'create',
      { method: 'POST', path: `${path(plural, namespace)}${query({ fieldManager })}`, body },
      (raw) => parseWith(model, plural.slice(0, -1), raw),
    );
  }

  /** A dry-run create of a VM that keeps the API server's warnings (unknown fields, say). */
  async function dryRunCreate(namespace: string, vm: VirtualMachine): Promise<Outcome<DryRun>> {
    const body = { ...vm, apiVersion: vm.apiVersion ?? API_VERSION, kind: 'VirtualMachine' };
    const q = query({ dryRun: 'All', fieldManager, fieldValidation: 'Warn' });
    return call(
      'dryRun',
      { method: 'POST', path: `${path(VMS, namespace)}${q}`, body },
      (raw, answer): Outcome<DryRun> => {
        const parsed = parseWith(VirtualMachine, 'virtualmachine', raw);
        if (!parsed.ok) return parsed;
        const header = answer.headers.warning;
        const warnings = warningTexts(Array.isArray(header) ? header.join(', ') : header);
        return { ok: true, value: { vm: parsed.value, warnings } };
      },
    );
  }

  /** PUT of the whole object; the API server answers 409 when its resourceVersion is stale. */
  async function replace<
    T extends { metadata: { name?: string; namespace?: string; resourceVersion?: string } },
  >(
    verb: 'update' | 'updateStatus',
    plural: Plural,
    model: z.ZodType<T>,
    obj: T,
  ): Promise<Outcome<T>> {
    const { name, namespace, resourceVersion } = obj.metadata;
    if (name === undefined || namespace === undefined || resourceVersion === undefined) {
      // An unconditioned PUT would overwrite concurrent writes: refuse it instead of sending it.
      return failure(
        'invalid',
        NO_HTTP_STATUS,
        `${verb} of ${plural} needs metadata.name, namespace and resourceVersion`,
      );
    }
    const sub = verb === 'updateStatus' ? 'status' : undefined;
    const q = query({ fieldManager });
    return call(
      verb,
      { method: 'PUT', path: `${path(plural, namespace, name, sub)}${q}`, body: obj },
      (raw) => parseWith(model, plural.slice(0, -1), raw),
    );
  }

  /**
   * Delete with preconditions. propagationPolicy goes in the body: the API server ignores the query
   * parameters of a DELETE that has a body.
   */
  function remove(plural: Plural, namespace: string, name: string, pre: Preconditions) {
    const preconditions =
      pre.resourceVersion === undefined
        ? { uid: pre.uid }
        : { uid: pre.uid, resourceVersion: pre.resourceVersion };
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Background',
      preconditions,
    };
    const q = query({ propagationPolicy: 'Background' });
    return call(
      'delete',
      { method: 'DELETE', path: `${path(plural, namespace, name)}${q}`, body },
      (): Outcome<undefined> => ({ ok: true, value: undefined }),
    );
  }

  /** A POST of a review object (SubjectAccessReview, TokenReview) to a cluster-scoped API. */
  function review<T>(
    verb: 'sar' | 'tokenReview',
    api: string,
    body: object,
    parse: (raw: unknown) => Outcome<T>,
  ) {
    return call(verb, { method: 'POST', path: api, body }, parse);
  }

  return {
    getPool: (namespace, name, notOlderThan) =>
      get(POOLS, VirtualMachinePool, namespace, name, notOlderThan),
    listPools: (namespace, page) => list(POOLS, VirtualMachinePool, namespace, undefined, page),
    listVms: (namespace, selector, page) => list(VMS, VirtualMachine, namespace, selector, page),
    listDisks: (namespace, selector, page) => list(DISKS, VirtualDisk, namespace, selector, page),
    getVm: (namespace, name) => get(VMS, VirtualMachine, namespace, name),
    createVm: (namespace, vm) => create(VMS, 'VirtualMachine', VirtualMachine, namespace, vm),
    createDisk: (namespace, disk) => create(DISKS, 'VirtualDisk', VirtualDisk, namespace, disk),
    dryRunCreateVm: (namespace, vm) => dryRunCreate(namespace, vm),
    updateVm: (vm) => replace('update', VMS, VirtualMachine, vm),
    updateDisk: (disk) => replace('update', DISKS, VirtualDisk, disk),
    updatePool: (pool) => replace('update', POOLS, VirtualMachinePool, pool),
    updatePoolStatus: (pool) => replace('updateStatus', POOLS, VirtualMachinePool, pool),
    deleteVm: (namespace, name, pre) => remove(VMS, namespace, name, pre),
    deleteDisk: (namespace, name, pre) => remove(DISKS, namespace, name, pre),

    async recordEvent(pool: EventPool, event: PoolEvent): Promise<Outcome<undefined>> {
      const namespace = pool.metadata.namespace;
      if (namespace === undefined) {
        return failure('invalid', NO_HTTP_STATUS, 'an Event needs the pool namespace');
      }
      const body = poolEventBody(pool, event, reportingInstance);
      return call(
        'event',
        {
          method: 'POST',
          path: `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`,
          body,
        },
        (): Outcome<undefined> => ({ ok: true, value: undefined }),
        1,
      );
    },

    listClaims: (namespace, page) => list(CLAIMS, VirtualMachineClaim, namespace, undefined, page),
    updateClaimStatus: (claim) => replace('updateStatus', CLAIMS, VirtualMachineClaim, claim),

    recordClaimEvent(namespace: string, claim: ClaimEventTarget, event: PoolEvent) {
      const regarding = {
        apiVersion: CLAIM_API_VERSION,
        kind: 'VirtualMachineClaim',
        name: claim.name,
        namespace,
        ...(claim.uid === '' ? {} : { uid: claim.uid }),
      };
      return call(
        'event',
        {
          method: 'POST',
          path: `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`,
          body: eventBody(regarding, event, reportingInstance),
        },
        (): Outcome<undefined> => ({ ok: true, value: undefined }),
        1,
      );
    },

    subjectAccessReview(q: AccessQuestion): Promise<Outcome<AccessDecision>> {
      const body = {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: q.user,
          groups: [...q.groups],
          ...(q.uid === undefined ? {} : { uid: q.uid }),
          ...(q.extra === undefined
            ? {}
            : { extra: Object.fromEntries(Object.entries(q.extra).map(([k, v]) => [k, [...v]])) }),
          resourceAttributes: {
            namespace: q.namespace,
            group: q.group,
            resource: q.resource,
            verb: q.verb,
            ...(q.subresource === undefined ? {} : { subresource: q.subresource }),
            ...(q.name === undefined ? {} : { name: q.name }),
          },
        },
      };
      return review(
        'sar',
        '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        body,
        (raw): Outcome<AccessDecision> => {
          const status = (raw as { status?: { allowed?: unknown; reason?: unknown } } | undefined)
            ?.status;
          if (typeof status?.allowed !== 'boolean') {
            return failure(
              'invalid',
              NO_HTTP_STATUS,
              'SubjectAccessReview answer has no status.allowed',
            );
          }
          return {
            ok: true,
            value:
              typeof status.reason === 'string' && status.reason !== ''
                ? { allowed: status.allowed, reason: status.reason }
                : { allowed: status.allowed },
          };
        },
      );
    },

    tokenReview(token, audiences): Promise<Outcome<TokenIdentity>> {
      const body = {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, audiences: [...audiences] },
      };
      return review(
        'tokenReview',
        '/apis/authentication.k8s.io/v1/tokenreviews',
        body,
        (raw): Outcome<TokenIdentity> => {
          const parsed = TokenReviewStatus.safeParse(
            (raw as { status?: unknown } | undefined)?.status,
          );
          if (!parsed.success)
            return failure('invalid', NO_HTTP_STATUS, 'TokenReview answer has no status');
          const st = parsed.data;
          const user = st.user;
          return {
            ok: true,
            value: {
              authenticated: st.authenticated === true,
              audiences: st.audiences ?? [],
              ...(user?.username === undefined
                ? {}
                : {
                    user: {
                      username: user.username,
                      ...(user.uid === undefined ? {} : { uid: user.uid }),
                      groups: user.groups ?? [],
                      extra: user.extra ?? {},
                    },
                  }),
              ...(st.error === undefined || st.error === '' ? {} : { error: st.error }),
            },
          };
        },
      );
    },

    getConfigMapData(namespace, name) {
      return call(
        'get',
        {
          method: 'GET',
          path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${encodeURIComponent(name)}`,
        },
        (raw): Outcome<Record<string, string>> => ({
          ok: true,
          value: { ...(raw as { data?: Record<string, string> } | undefined)?.data },
        }),
      );
    },

    counts: () => tally.snapshot(),
  };
}

/**
 * A 2xx body as JSON (empty: undefined), `prepare`d first if given, through `parse`; text that is
 * not JSON is `invalid`.
 */
function parseBody<T>(
  answer: HttpAnswer,
  parse: (raw: unknown, answer: HttpAnswer) => Outcome<T>,
  prepare?: (text: string) => string,
): Outcome<T> {
  let raw: unknown;
  try {
    const text = prepare === undefined ? answer.text : prepare(answer.text);
    raw = text === '' ? undefined : JSON.parse(text);
  } catch {
    return failure('invalid', NO_HTTP_STATUS, 'API server returned a body that is not JSON');
  }
  return parse(raw, answer);
}
