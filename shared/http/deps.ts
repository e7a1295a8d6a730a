/**
 * What every function app is built from. Metrics, the clock and the dice are defaulted here, once.
 * @module
 */
import type { Kube } from '../kube/index.js';
import { createHealth } from './health.js';
import type { Health } from './health.js';
import type { Logger } from './log.js';
import type { FunctionMetrics } from './metrics.js';
import { createFunctionMetrics } from './metrics.js';

/** Dependencies of a function app; tests inject the clock, the dice and a metrics registry. */
export interface AppDeps {
  readonly kube: Kube;
  readonly log: Logger;
  readonly metrics?: FunctionMetrics;
  readonly now?: () => Date;
  /** Floats in [0, 1), like Math.random. */
  readonly rand?: () => number;
  /** Readiness, shared with the server (which requires a loaded certificate). */
  readonly health?: Health;
}

/** The dependencies with every default filled in. */
export type ResolvedDeps = Required<AppDeps>;

/** Fills in the defaults: fresh metrics, the real clock, Math.random, a health that is ready. */
export function resolveDeps(deps: AppDeps): ResolvedDeps {
  return {
    kube: deps.kube,
    log: deps.log,
    metrics: deps.metrics ?? createFunctionMetrics(),
    now: deps.now ?? (() => new Date()),
    rand: deps.rand ?? Math.random,
    health: deps.health ?? createHealth(),
  };
}
