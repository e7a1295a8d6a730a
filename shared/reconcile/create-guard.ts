/**
 * Keeps a pass's creates on what the pool still asks for while they run. A pass's creates follow
 * its fence, but several passes may hold the same pending names, and a pass working through its
 * creates does not see the desire drop. Without a fresh look, a lagging pass goes on creating after
 * a scale taken back, a pause or a deletion, and may make a name a second time after another pass
 * made it and a scale-down (or the garbage collector) removed it.
 * @module
 */
import type { VirtualMachinePool } from '../api/index.js';
import { createsStillIntended } from '../domain/index.js';
import type { Kube } from '../kube/index.js';
import { PARALLEL } from './batch.js';

/** Whether a pass may still create a name, refreshed from the pool as creates complete. */
export interface CreateGuard {
  /** The pool, as last read, still records `name` as a create to make (asked as a create starts). */
  admits(name: string): boolean;
  /** A create finished (`ok`: made or found made): re-read the pool when enough have since the last
   * read and more are still to start. */
  completed(ok: boolean): void;
  /** Waits for a read still in flight (so none outlives the pass); throws what a read threw. */
  settle(): Promise<void>;
}

/**
 * A guard for a pass with `total` creates, starting from `pool` as the fence wrote it (its spec the
 * plan's). The pool is re-read in the background after 1, 2, 4, … completed creates, then after
 * every {@link PARALLEL} (about once per round trip of the creates in flight), never once the last
 * create started: creation stops within about two rounds of a change of the desire, at the cost of
 * one GET per {@link PARALLEL} creates. A read that fails transiently keeps the last answer; the
 * fence and the next pass stay the net.
 *
 * The reads are served from the API server's watch cache, no older than the fence (`pool`'s
 * resourceVersion): the guard only ever stops creates, so a read a few milliseconds behind etcd
 * stops them that much later, well inside the two rounds, while a consistent GET of a pool holding
 * hundreds of pending names is a range read of etcd each time. The cache has seen the fence's own
 * write, so the read never waits for a progress notification as a consistent list may. Each read
 * asks for no older than the last answer, and the guard only ever narrows what it admits: with
 * several API servers, a read from one whose cache lags another's never takes back a stop.
 */
export function createGuard(kube: Kube, pool: VirtualMachinePool, total: number): CreateGuard {
  const ns = pool.metadata.namespace ?? '';
  const name = pool.metadata.name ?? '';
  let since = pool.metadata.resourceVersion;
  let intended = createsStillIntended(pool, pool);
  let started = 0;
  let done = 0;
  let doneAtRead = 0;
  let reading: Promise<void> | undefined;
  // A read runs beside the creates, awaited by no one until settle(): what it throws (a bug, or a
  // crash a test injects) is kept for settle() instead of becoming an unhandled rejection.
  let thrown: { readonly error: unknown } | undefined;

  const read = async (): Promise<void> => {
    const got = await kube.getPool(ns, name, since);
    if (got.ok) {
      since = got.value.metadata.resourceVersion ?? since;
      intended = narrowed(intended, createsStillIntended(got.value, pool));
    }
    // Only a transient failure keeps the last answer: a pool gone, unreadable (L8) or no longer
    // readable by us stops the creates (fail closed; the next pass says why).
    else if (got.reason !== 'transient') intended = createsStillIntended(undefined, pool);
  };
  const due = (): boolean =>
    reading === undefined &&
    started < total &&
    done - doneAtRead >= Math.min(PARALLEL, Math.max(1, doneAtRead));
  return {
    admits: (n) => {
      started++;
      return intended.has(n);
    },
    completed: (ok) => {
      done++;
      if (!ok || !due()) return;
      doneAtRead = done;
      reading = read()
        .catch((error: unknown) => {
          thrown ??= { error };
        })
        .finally(() => {
          reading = undefined;
        });
    },
    settle: async () => {
      await reading;
      if (thrown !== undefined) throw thrown.error;
    },
  };
}

/** The names both answers admit: a name once dropped is never admitted again by this guard. */
function narrowed(before: ReadonlySet<string>, now: ReadonlySet<string>): ReadonlySet<string> {
  return new Set([...now].filter((n) => before.has(n)));
}
