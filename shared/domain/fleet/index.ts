/**
 * The fleet policies plan steps consult: who belongs to a pool and where a member is in its life,
 * which members a scale-down removes (ranking, protection, deletion cost), drain before removal, the
 * disruption budget, healing's condition, standby and replica roles, template rollout, lifetime
 * (age), scaledownwith targets, the VM a template produces, and the shard a pool falls in.
 * @module
 */
export * from './budget.js';
export * from './claimed.js';
export * from './drain.js';
export * from './healing.js';
export * from './lifecycle.js';
export * from './member.js';
export * from './membership.js';
export * from './roles.js';
export * from './rollout.js';
export * from './scale.js';
export * from './scale-down-with.js';
export * from './shard.js';
export * from './targets.js';
export * from './victims.js';
