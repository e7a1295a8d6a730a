/**
 * The HTTP edge of vmpool's functions: CloudEvents parsing, the response contract, health, metrics,
 * logging and serving.
 * @module
 */
export { auditFields, authorize, createAccessCheck } from './access.js';
export type { AccessCheck, AccessOptions, AccessRequest } from './access.js';
export { buildFunctionApp, cloudEventHandler } from './app.js';
export { caFile, refuseClient, requireClientCertificate } from './client-ca.js';
export type { ClientCaOptions } from './client-ca.js';
export type { EventContext, FunctionAppOptions } from './app.js';
export type { Caller, NodeEnv } from './env.js';
export { DEFAULT_MAX_BODY_BYTES, limitBody } from './body-limit.js';
export { DEFAULT_MAX_EVENT_BYTES, parseCloudEvent } from './cloudevent.js';
export type { EventParse, EventRejection, ParsedEvent } from './cloudevent.js';
export { resolveDeps } from './deps.js';
export type { AppDeps, ResolvedDeps } from './deps.js';
export { authenticate, commonName, headerLines, loadFrontProxy } from './frontproxy.js';
export type { FrontProxy, HeaderLines } from './frontproxy.js';
export { bearerToken, createEventAccessCheck, createTokenCheck } from './oidc.js';
export type { EventAccessOptions, TokenCheck, TokenCheckOptions } from './oidc.js';
export { createHealth, healthRoutes } from './health.js';
export type { Health } from './health.js';
export { REDACTED_PATHS, createLogger, eventLogger, logMalformed, prettyLine } from './log.js';
export type { EventIdentity, Logger, LoggerOptions } from './log.js';
export {
  DEFAULT_BUCKETS,
  METRICS_CONTENT_TYPE,
  createFunctionMetrics,
  createRegistry,
  escapeLabelValue,
} from './metrics.js';
export type { Counter, FunctionMetrics, Gauge, Histogram, Registry } from './metrics.js';
export type { ClaimMetrics } from './claim-metrics.js';
export { BIND_BUCKETS, createClaimMetrics } from './claim-metrics.js';
export {
  accepted,
  badRequest,
  conflict,
  errorResponse,
  noContent,
  retryLater,
} from './responses.js';
export { parseBody } from './parse.js';
export type { BodyParsed } from './parse.js';
export { serveApp } from './serve.js';
export { apiResponse, eventReply, statusResponse } from './status.js';
export { poolNotFound, statusFailure, statusSuccess } from '../api/index.js';
export type { Status, StatusCause } from '../api/index.js';
export type { ServeOptions, ServedApp } from './serve.js';
export { clientCertificate, readTls, signedBy } from './tls.js';
export type { ClientCertificate, TlsFiles, TlsMaterial } from './tls.js';
