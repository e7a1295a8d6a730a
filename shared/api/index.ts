/**
 * zod models of every object and message vmpool reads or writes: the only schemas in the project.
 * @module
 */
export * from './meta.js';
export * from './vm.js';
export * from './disk.js';
export * from './pool.js';
export * from './claim.js';
export * from './duration.js';
export * from './messages.js';
export * from './events.js';
export * from './crd.js';
export * from './claim-crd.js';
export * from './issues.js';
export * from './manifest.js';
export * from './status.js';
