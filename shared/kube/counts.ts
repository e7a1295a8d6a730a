/**
 * Request counting by verb and by `verb:outcome`.
 * @module
 */
import type { RequestCounts } from './types.js';

/** The verbs vmpool's API calls are counted under. */
export type Verb =
  | 'get'
  | 'list'
  | 'create'
  | 'update'
  | 'updateStatus'
  | 'delete'
  | 'event'
  | 'sar'
  | 'tokenReview'
  | 'dryRun';

/** `ok` or the failure reason of one HTTP request. */
export type RequestOutcome =
  'ok' | 'notFound' | 'conflict' | 'alreadyExists' | 'invalid' | 'forbidden' | 'transient';

/** Called after every HTTP request (each retry counts), e.g. to feed Prometheus. */
export type RequestHook = (verb: Verb, outcome: RequestOutcome, seconds: number) => void;

/** A mutable tally whose snapshot is {@link RequestCounts}. */
export class RequestTally {
  readonly #counts = new Map<string, number>();

  /** Counts one request. */
  add(verb: Verb, outcome: RequestOutcome): void {
    this.#bump(verb);
    this.#bump(`${verb}:${outcome}`);
  }

  /** A copy, so benchmarks can diff two snapshots. */
  snapshot(): RequestCounts {
    return Object.fromEntries(this.#counts);
  }

  #bump(key: string): void {
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }
}
