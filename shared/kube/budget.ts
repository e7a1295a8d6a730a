/**
 * What the API calls made on behalf of one request may spend: an abort signal (the caller went away),
 * a deadline (the caller stops waiting), a per-call timeout and a number of attempts. The funnel
 * reads the budget of the request it works for, so a processor passes it once instead of threading
 * it through every call.
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** Limits of the API calls made while handling one request. */
export interface CallBudget {
  /** Aborts the calls in flight and refuses new ones (e.g. the client disconnected). */
  readonly signal?: AbortSignal;
  /** Total time for every call and retry from now, in ms. */
  readonly totalMs?: number;
  /** Timeout of each HTTP request, in ms (shorter than the funnel's default). */
  readonly timeoutMs?: number;
  /** Attempts per call, the first included (fewer than the funnel's policy). */
  readonly attempts?: number;
}

/** A budget in force: its deadline as a `performance.now()` instant. */
export interface ActiveBudget {
  readonly signal?: AbortSignal;
  readonly deadline?: number;
  readonly totalMs?: number;
  readonly timeoutMs?: number;
  readonly attempts?: number;
}

const current = new AsyncLocalStorage<ActiveBudget>();

const min = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b);

/**
 * Runs `work` with `budget` applied to every API call it makes through the funnel. A budget inside
 * another one narrows it: the earlier deadline, the fewer attempts, either signal.
 */
export function withCallBudget<T>(budget: CallBudget, work: () => Promise<T>): Promise<T> {
  const outer = current.getStore();
  const signals = [outer?.signal, budget.signal].filter((s) => s !== undefined);
  const deadline = min(
    outer?.deadline,
    budget.totalMs === undefined ? undefined : performance.now() + budget.totalMs,
  );
  const totalMs = deadline === outer?.deadline ? outer?.totalMs : budget.totalMs;
  const timeoutMs = min(outer?.timeoutMs, budget.timeoutMs);
  const attempts = min(outer?.attempts, budget.attempts);
  const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  const active: ActiveBudget = {
    ...(signal === undefined ? {} : { signal }),
    ...(deadline === undefined ? {} : { deadline }),
    ...(totalMs === undefined ? {} : { totalMs }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(attempts === undefined ? {} : { attempts }),
  };
  return current.run(active, work);
}

/** The budget of the request being handled, if any. */
export function activeBudget(): ActiveBudget | undefined {
  return current.getStore();
}
