/**
 * Admission of pools and their `/scale` subresource: validation with the reference's messages, the
 * decisions the webhook returns (Explicit replicas, dry-run of the template's VM, scaledownwith
 * targets written by the right writer), and how far one write may grow a pool.
 * @module
 */
export * from './admission.js';
export * from './claims.js';
export * from './growth.js';
export * from './target-admission.js';
export * from './validation.js';
