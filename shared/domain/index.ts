/**
 * The pure core of vmpool: no I/O, no clock, no randomness of its own. `plan/` is the pipeline from
 * what a reconcile read to what it does; `fleet/` and `disks/` are the policies its steps consult;
 * `admission/` answers the webhook; `formats/` holds names, hashes, durations and quantities.
 * @module
 */
export * from './admission/index.js';
export * from './disks/index.js';
export * from './fleet/index.js';
export * from './formats/index.js';
export * from './plan/index.js';
