/**
 * disk-gc-tick: on each PingSource tick, deletes free Retain disks beyond `keep` that have been free
 * longer than `ttl` — never one a live member references or a pool's intent binds.
 * @module
 */
import type { Hono } from 'hono';
import { PING } from '../../shared/api/index.js';
import type { NodeEnv } from '../../shared/http/index.js';
import {
  accepted,
  badRequest,
  buildFunctionApp,
  cloudEventHandler,
  createFunctionMetrics,
  retryLater,
} from '../../shared/http/index.js';
import { collectDisks } from '../../shared/reconcile/index.js';
import type { FunctionDeps } from '../../shared/runtime/index.js';

/** Dependencies; the clock defaults to the real one. */
export interface GcAppDeps extends Partial<Pick<FunctionDeps, 'metrics'>> {
  readonly kube: FunctionDeps['kube'];
  readonly log: FunctionDeps['log'];
  readonly now?: () => Date;
}

/** The disk-gc-tick HTTP app: `POST /` takes one PingSource CloudEvent. */
export function buildGcApp(deps: GcAppDeps): Hono<NodeEnv> {
  const metrics = deps.metrics ?? createFunctionMetrics();
  const app = buildFunctionApp({ name: 'disk-gc-tick', log: deps.log, metrics });
  app.post(
    '/',
    cloudEventHandler(deps.log, async function tick(event, { log }) {
      if (event.type !== PING) return badRequest(`expected a ${PING} event, got ${event.type}`);
      const out = await collectDisks(deps.kube, (deps.now ?? (() => new Date()))(), log);
      if (out.kind === 'forbidden') {
        // Logged by collectDisks with the grant to add; a redelivered tick would be refused again.
        metrics.reconciles.inc({ function: 'disk-gc-tick', outcome: 'forbidden' });
        return accepted();
      }
      if (out.kind === 'retry') {
        metrics.reconciles.inc({ function: 'disk-gc-tick', outcome: 'retry' });
        return retryLater(`listing failed: ${out.reason}`);
      }
      metrics.reconciles.inc({ function: 'disk-gc-tick', outcome: 'done' });
      metrics.actions.inc({ kind: 'deleteDisk', outcome: 'ok' }, out.deleted.length);
      log.info(
        { deleted: out.deleted.length, skipped: out.skipped, nextWakeMs: out.nextWakeMs },
        'disk GC pass',
      );
      return accepted();
    }),
  );
  return app;
}
