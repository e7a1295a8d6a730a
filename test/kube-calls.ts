/**
 * Counting one method's calls on a Kube (the in-memory one or the deployed client) without changing
 * what it answers.
 * @module
 */
import type { Kube } from '../shared/kube/index.js';

/** `kube` with the calls of `method` counted; `calls()` says how many so far. */
export function countingCalls(kube: Kube, method: keyof Kube): { kube: Kube; calls: () => number } {
  let n = 0;
  const proxy = new Proxy(kube, {
    get(target, prop: keyof Kube): unknown {
      if (prop === method) n++;
      return Reflect.get(target, prop);
    },
  });
  return { kube: proxy, calls: () => n };
}
