/**
 * Liveness and readiness, with readiness switched off during shutdown and held off while a condition
 * it depends on (a loaded, valid serving certificate) does not hold.
 * @module
 */
import { Hono } from 'hono';

/** Readiness state shared by the server (which flips it on shutdown) and the probe routes. */
export interface Health {
  /** Not shutting down and every condition holds. */
  readonly ready: boolean;
  setReady(ready: boolean): void;
  /** Adds a condition of readiness: `check` returns why the process is not ready, or undefined. */
  require(check: () => string | undefined): void;
  /** Why the process is not ready, or undefined when it is. */
  notReady(): string | undefined;
}

/** A Health that starts ready. */
export function createHealth(): Health {
  let ready = true;
  const checks: Array<() => string | undefined> = [];
  const notReady = (): string | undefined => {
    if (!ready) return 'shutting down';
    for (const check of checks) {
      const why = check();
      if (why !== undefined) return why;
    }
    return undefined;
  };
  return {
    get ready() {
      return notReady() === undefined;
    },
    setReady(value: boolean) {
      ready = value;
    },
    require(check) {
      checks.push(check);
    },
    notReady,
  };
}

/**
 * `/health/liveness` (always 200 "OK" while the process serves) and `/health/readiness` (503 with
 * the reason once shutdown began or while a condition does not hold, so the endpoint is dropped).
 */
export function healthRoutes(health: Health): Hono {
  const app = new Hono();
  app.get('/health/liveness', (c) => c.text('OK'));
  app.get('/health/readiness', (c) => {
    const why = health.notReady();
    return why === undefined ? c.text('OK') : c.text(why, 503);
  });
  return app;
}
