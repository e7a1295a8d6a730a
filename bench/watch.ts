/**
 * A watch that keeps the set of live objects of one collection and timestamps every ADDED event,
 * so "every VM exists" and "the replacement exists" are observed as a user's watch would see them.
 * @module
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Watch } from '@kubernetes/client-node';

/** One watched collection. */
export interface Watched {
  /** Names of the objects that exist now. */
  readonly names: ReadonlySet<string>;
  /** Resolves at the first moment `test` holds (checked on every event); the time is performance.now(). */
  until(test: (w: Watched) => boolean, timeoutMs?: number): Promise<number>;
  /** Resolves with the time and name of the next ADDED object satisfying `filter`. */
  nextAdded(
    filter?: (name: string) => boolean,
    timeoutMs?: number,
  ): Promise<{ at: number; name: string }>;
  stop(): void;
}

type Listener = (type: string, name: string, at: number) => void;

/** Watches `path` (a collection URL path); resolves once the existing objects have been received. */
export async function watchCollection(kc: KubeConfig, path: string): Promise<Watched> {
  const short = path.split('/').slice(-3).join('/');
  const names = new Set<string>();
  const listeners = new Set<Listener>();
  let abort: AbortController | undefined;
  let stopped = false;
  let failures = 0;

  // A reconnect the API server refuses is tried again (it may be busy, or restarting), a few times.
  const resume = (): void => {
    setTimeout(() => {
      if (stopped) return;
      start().catch((err: unknown) => {
        console.error(`watch ${path}: ${err instanceof Error ? err.message : String(err)}`);
        if (++failures > 5) stopped = true;
        else resume();
      });
    }, 200).unref();
  };
  const start = async (): Promise<void> => {
    abort = await new Watch(kc).watch(
      path,
      {},
      (type: string, obj: { metadata?: { name?: string } }) => {
        const at = performance.now();
        failures = 0;
        if (type === 'BOOKMARK') return;
        const name = obj.metadata?.name ?? '';
        if (type === 'DELETED') names.delete(name);
        else names.add(name);
        for (const l of listeners) l(type, name, at);
      },
      (err: unknown) => {
        if (stopped) return;
        // A plane that is gone does not come back: give up after a few refused reconnects.
        if (err !== null && err !== undefined && ++failures > 5) {
          stopped = true;
          return;
        }
        // The API server ends watches every few minutes; resume (the initial events repeat).
        if (err !== null && err !== undefined)
          console.error(`watch ${path}: ${err instanceof Error ? err.message : 'ended'}`);
        resume();
      },
    );
  };
  await start();
  // Without a resourceVersion the watch begins with an ADDED event per existing object.
  await new Promise((r) => setTimeout(r, 300));

  const w: Watched = {
    names,
    until(test, timeoutMs = 120_000) {
      if (test(w)) return Promise.resolve(performance.now());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(l);
          reject(
            new Error(
              `watch ${short}: condition not met in ${timeoutMs} ms (${names.size} objects)`,
            ),
          );
        }, timeoutMs);
        const l: Listener = (_t, _n, at) => {
          if (!test(w)) return;
          clearTimeout(timer);
          listeners.delete(l);
          resolve(at);
        };
        listeners.add(l);
      });
    },
    nextAdded(filter = () => true, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(l);
          reject(new Error(`watch ${path}: no new object in ${timeoutMs} ms`));
        }, timeoutMs);
        const l: Listener = (type, name, at) => {
          if (type !== 'ADDED' || !filter(name)) return;
          clearTimeout(timer);
          listeners.delete(l);
          resolve({ at, name });
        };
        listeners.add(l);
      });
    },
    stop() {
      stopped = true;
      abort?.abort();
    },
  };
  return w;
}
