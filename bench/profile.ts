/**
 * A CPU profile of a piece of synchronous work, summarized: self time by function, so a benchmark
 * that misses its goal can show where the time goes instead of guessing.
 * @module
 */
import { Session } from 'node:inspector/promises';
import { basename } from 'node:path';

/** One function's share of a profile. */
export interface SelfTime {
  /** `name (file)`; anonymous functions are `(anonymous)`. */
  readonly fn: string;
  /** Self time per call of the profiled work, ms. */
  readonly ms: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** V8's pseudo-frames: not code of ours or of Node's. */
const PSEUDO = new Set(['(idle)', '(program)', '(root)']);

/**
 * Runs `work` `runs` times under the V8 sampling profiler (1 sample per 100 µs) and returns each
 * function's self time per run, largest first. Garbage collection appears as `(garbage collector)`.
 */
export async function profileSelfTime(work: () => void, runs: number): Promise<SelfTime[]> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    for (let i = 0; i < runs; i++) work();
    const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    profile.samples.forEach((id, i) => {
      const f = byId.get(id)?.callFrame;
      if (f === undefined) return;
      const name = f.functionName === '' ? '(anonymous)' : f.functionName;
      if (PSEUDO.has(name)) return;
      const key = f.url === '' ? name : `${name} (${basename(f.url)})`;
      self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
    });
    return [...self].map(([fn, total]) => ({ fn, ms: total / runs })).sort((a, b) => b.ms - a.ms);
  } finally {
    session.disconnect();
  }
}
