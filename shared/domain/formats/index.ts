/**
 * The formats of values a pool reads and writes: generated names, template hashes, Go durations,
 * resource quantities, and JSON copied without recursion.
 * @module
 */
export * from './duration.js';
export * from './hash.js';
export * from './json.js';
export * from './names.js';
export * from './quantity.js';
export * from './time.js';
