/**
 * The common shell of every vmpool function: body cap, request metrics and logs, health, /metrics,
 * and an error boundary, so a function file only adds its route.
 * @module
 */
import { Hono } from 'hono';
import type { Context, Handler } from 'hono';
import { DEFAULT_MAX_BODY_BYTES, limitBody } from './body-limit.js';
import { parseCloudEvent } from './cloudevent.js';
import type { ParsedEvent } from './cloudevent.js';
import { createHealth, healthRoutes } from './health.js';
import type { Health } from './health.js';
import type { NodeEnv } from './env.js';
import { eventLogger } from './log.js';
import type { Logger } from './log.js';
import { METRICS_CONTENT_TYPE, createFunctionMetrics } from './metrics.js';
import type { FunctionMetrics } from './metrics.js';
import { errorResponse } from './responses.js';
import { statusFailure } from '../api/index.js';
import { statusResponse } from './status.js';

/** Options of {@link buildFunctionApp}. */
export interface FunctionAppOptions {
  /** The function's name, as the `function` label and the log name. */
  readonly name: string;
  readonly log: Logger;
  readonly metrics?: FunctionMetrics;
  readonly health?: Health;
  /** Request body cap (default 1 MiB). */
  readonly maxBodyBytes?: number;
  /**
   * Errors of paths under this prefix (an aggregated API's `/apis`) are metav1.Status, which kubectl
   * prints; elsewhere they are JSON `{error}`.
   */
  readonly statusPrefix?: string;
}

const PROBES = new Set(['/health/readiness', '/health/liveness', '/metrics']);

/**
 * A Hono app with the shared middleware and routes; add the function's own route(s) to it.
 *
 * Unhandled exceptions are bugs: they are logged and answered with 500 JSON `{error}`, never with the
 * exception text (it may carry object contents).
 */
export function buildFunctionApp(opts: FunctionAppOptions): Hono<NodeEnv> {
  const metrics = opts.metrics ?? createFunctionMetrics();
  const health = opts.health ?? createHealth();
  const app = new Hono<NodeEnv>();
  const { statusPrefix } = opts;
  const fail = (c: Context<NodeEnv>, code: number, message: string): Response =>
    statusPrefix !== undefined && c.req.path.startsWith(statusPrefix)
      ? statusResponse(statusFailure(code, message))
      : errorResponse(code, message);

  app.use('*', async function observeRequest(c, next) {
    if (PROBES.has(c.req.path)) {
      await next();
      return;
    }
    const start = performance.now();
    await next();
    const seconds = (performance.now() - start) / 1000;
    metrics.requestDuration.observe(
      { function: opts.name, method: c.req.method, code: String(c.res.status) },
      seconds,
    );
    const line = {
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: Math.round(seconds * 1000),
    };
    if (c.res.status >= 500) opts.log.warn(line, 'request failed');
    else opts.log.debug(line, 'request');
  });
  app.use('*', limitBody(opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, fail));
  app.route('/', healthRoutes(health));
  app.get('/metrics', (c) =>
    c.body(metrics.registry.render(), 200, { 'Content-Type': METRICS_CONTENT_TYPE }),
  );
  app.notFound((c) =>
    statusPrefix !== undefined && c.req.path.startsWith(statusPrefix)
      ? fail(c, 404, 'the server could not find the requested resource')
      : fail(c, 404, 'not found'),
  );
  app.onError((err, c) => {
    opts.log.error({ err, method: c.req.method, path: c.req.path }, 'unhandled error');
    return fail(c, 500, 'internal error');
  });
  return app;
}

/** What a CloudEvent handler receives besides the event. */
export interface EventContext {
  /**
   * Carries the event id and type; add the pool key with `log.child({ pool })`. Built when first
   * read: a handler that answers without logging (most events of a scale-up) never pays for it.
   */
  readonly log: Logger;
  readonly c: Context<NodeEnv>;
}

/**
 * A route handler that parses one CloudEvent and passes it on; malformed events are answered (400,
 * 413, 415) and logged here, so `handle` only sees valid ones.
 */
export function cloudEventHandler(
  log: Logger,
  handle: (event: ParsedEvent, ctx: EventContext) => Promise<Response>,
  maxBytes?: number,
): Handler<NodeEnv> {
  return async function onCloudEvent(c) {
    // Served by Node, its own header object: reading `c.req.raw.headers` in full builds a web
    // Headers copy of every header for each event (app.request in tests has no Node request).
    const headers = (c.env as Partial<NodeEnv['Bindings']> | undefined)?.incoming?.headers;
    const parsed = parseCloudEvent(headers ?? c.req.raw.headers, await c.req.text(), maxBytes);
    if (!parsed.ok) {
      log.warn({ status: parsed.status, reason: parsed.message }, 'rejected event');
      return errorResponse(parsed.status, parsed.message);
    }
    let child: Logger | undefined;
    return handle(parsed.event, {
      get log() {
        return (child ??= eventLogger(log, parsed.event));
      },
      c,
    });
  };
}
