/**
 * Bounded, jittered retries of transient failures.
 * @module
 */

/** How transient failures are retried. */
export interface RetryPolicy {
  /** Total attempts, the first included (default 3). */
  readonly attempts: number;
  /** Backoff before the first retry, doubled each time, before jitter (default 50 ms). */
  readonly baseMs: number;
  /** Cap of the backoff before jitter (default 400 ms). */
  readonly maxMs: number;
  /** Cap on a server's Retry-After (default 2 s): a function must answer its caller in time. */
  readonly maxRetryAfterMs: number;
}

/** The default policy: 3 attempts, 50-400 ms full jitter, Retry-After honoured up to 2 s. */
export const defaultRetryPolicy: RetryPolicy = {
  attempts: 3,
  baseMs: 50,
  maxMs: 400,
  maxRetryAfterMs: 2000,
};

/**
 * Delay before retry number `retry` (0-based): full jitter over an exponential ceiling, or the
 * server's Retry-After (capped) when it gave one.
 */
export function backoffMs(
  policy: RetryPolicy,
  retry: number,
  random: () => number,
  retryAfter?: number,
): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, policy.maxRetryAfterMs);
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** retry);
  // Full jitter, but never below the base: concurrent reconciles must spread out, not stampede.
  return Math.max(policy.baseMs, Math.floor(random() * ceiling));
}

/** A promise that resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
