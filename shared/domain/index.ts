/**
 * The pure core of vmpool: no I/O, no clock, no randomness of its own.
 * @module
 */
export * from './actions.js';
export * from './admission/index.js';
export * from './blocked.js';
export * from './disks/index.js';
export * from './formats/index.js';
export * from './fleet/index.js';
export * from './malformed.js';
export * from './plan.js';
export * from './status.js';
export * from './preview.js';
export * from './events.js';
