/**
 * Liveness and readiness, with readiness switched off during shutdown.
 * @module
 */
import { Hono } from 'hono';

/** Readiness state shared by the server (which flips it on shutdown) and the probe routes. */
export interface Health {
  readonly ready: boolean;
  setReady(ready: boolean): void;
}

/** A Health that starts ready. */
export function createHealth(): Health {
  let ready = true;
  return {
    get ready() {
      return ready;
    },
    setReady(value: boolean) {
      ready = value;
    },
  };
}

/**
 * `/health/liveness` (always 200 "OK" while the process serves) and `/health/readiness` (503 once
 * shutdown began, so the endpoint is dropped before the server closes).
 */
export function healthRoutes(health: Health): Hono {
  const app = new Hono();
  app.get('/health/liveness', (c) => c.text('OK'));
  app.get('/health/readiness', (c) => (health.ready ? c.text('OK') : c.text('shutting down', 503)));
  return app;
}
