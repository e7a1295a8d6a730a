/**
 * Per-replica disks: which disks a member gets (binding a recorded, free or new disk), which the
 * pool no longer wants (prune), when a disk is in use, its size growth, and the garbage collection
 * of free Retain disks.
 * @module
 */
export * from './bind.js';
export * from './collisions.js';
export * from './disks.js';
export * from './gc.js';
export * from './gc-facts.js';
export * from './in-use.js';
export * from './prune.js';
