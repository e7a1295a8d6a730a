/**
 * vmpool's single I/O funnel to the API server.
 * @module
 */
export type * from './types.js';
export { withCallBudget } from './budget.js';
export type { CallBudget } from './budget.js';
export { createKube } from './client.js';
export type { KubeOptions } from './client.js';
export { loadCredentials } from './credentials.js';
export type { Credentials } from './transport.js';
export type { RequestHook, RequestOutcome, Verb } from './counts.js';
export { defaultRetryPolicy } from './retry.js';
export type { RetryPolicy } from './retry.js';
export { NO_HTTP_STATUS } from './failure.js';
export { createManifests, pathOf } from './manifests.js';
export type { ApplyOptions, Manifests, ManifestsOptions } from './manifests.js';
