/**
 * The pure core of vmpool: no I/O, no clock, no randomness of its own.
 * @module
 */
export * from './actions.js';
export * from './admission.js';
export * from './blocked.js';
export * from './disks.js';
export * from './formats/index.js';
export * from './gc.js';
export * from './growth.js';
export * from './in-use.js';
export * from './malformed.js';
export * from './membership.js';
export * from './plan.js';
export * from './rollout.js';
export * from './scale.js';
export * from './scale-down-with.js';
export * from './status.js';
export * from './targets.js';
export * from './target-admission.js';
export * from './validation.js';
export * from './preview.js';
export * from './victims.js';
export * from './drain.js';
export * from './events.js';
export * from './budget.js';
export * from './lifecycle.js';
export * from './roles.js';
