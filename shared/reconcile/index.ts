/**
 * Executing the domain's plans against the API server: shared by reconcile-pool, `npm start` and tests.
 * @module
 */
export * from './batch.js';
export * from './blocked.js';
export * from './converge.js';
export * from './event-log.js';
export * from './execute.js';
export * from './orphans.js';
export * from './resync.js';
export * from './scope.js';
export * from './gc.js';
export * from './scale-down-with.js';
export * from './coalesce.js';
export * from './claim-metrics.js';
export * from './admission.js';
export * from './recheck.js';
export * from './pool-reads.js';
export * from './window.js';
export * from './own-writes.js';
