/**
 * disk-gc-tick: on each PingSource tick, deletes free Retain disks beyond `keep` that have been free
 * longer than `ttl` — never one a live member references or a pool's intent binds.
 * @module
 */
import type { Hono } from 'hono';
import { PING } from '../../shared/api/index.js';
import type { AppDeps, NodeEnv } from '../../shared/http/index.js';
import {
  accepted,
  badRequest,
  buildFunctionApp,
  cloudEventHandler,
  resolveDeps,
  retryLater,
} from '../../shared/http/index.js';
import { collectDisks } from '../../shared/reconcile/index.js';

/** The disk-gc-tick HTTP app: `POST /` takes one PingSource CloudEvent. */
export function buildGcApp(input: AppDeps): Hono<NodeEnv> {
  const { kube, log, metrics, now, health } = resolveDeps(input);
  const app = buildFunctionApp({ name: 'disk-gc-tick', log, metrics, health });
  app.post(
    '/',
    cloudEventHandler(log, async function tick(event, { log }) {
      if (event.type !== PING) return badRequest(`expected a ${PING} event, got ${event.type}`);
      const out = await collectDisks(kube, now(), log);
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
