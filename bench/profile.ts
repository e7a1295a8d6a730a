/**
 * A CPU profile of a piece of synchronous work, summarized: self time by function, so a benchmark
 * that misses its goal can show where the time goes instead of guessing.
 * @module
 */
import { Session } from 'node:inspector/promises';
import { basename } from 'node:path';
import { sourceNamer } from './sourcemap.js';
import type { SourceNamer } from './sourcemap.js';

/** One function's share of a profile. */
export interface SelfTime {
  /** `name (file)`; anonymous functions are `(anonymous)`. */
  readonly fn: string;
  /** Self time per call of the profiled work, ms. */
  readonly ms: number;
}

interface ProfileNode {
  readonly id: number;
  readonly children?: readonly number[];
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
    readonly columnNumber: number;
  };
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** The file a frame's function is in: through the script's source map where it has one. */
function fileOf(frame: ProfileNode['callFrame'], names: SourceNamer): string {
  return names(frame.url, frame.lineNumber, frame.columnNumber) ?? frame.url;
}

/** V8's pseudo-frames: not code of ours or of Node's. */
const PSEUDO = new Set(['(idle)', '(program)', '(root)']);

/** Calls `visit` with each sample's frame, its function's name and its ms, pseudo-frames left out. */
function eachSample(
  profile: Profile,
  visit: (frame: ProfileNode['callFrame'], name: string, ms: number, id: number) => void,
): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  profile.samples.forEach((id, i) => {
    const f = byId.get(id)?.callFrame;
    if (f === undefined) return;
    const name = f.functionName === '' ? '(anonymous)' : f.functionName;
    if (!PSEUDO.has(name)) visit(f, name, (profile.timeDeltas[i] ?? 0) / 1000, id);
  });
}

/**
 * Runs `work` `runs` times under the V8 sampling profiler (1 sample per 100 µs) and returns each
 * function's self time per run, largest first. Garbage collection appears as `(garbage collector)`.
 * A bundle with a source map beside it has its functions named by their source files.
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
    const self = new Map<string, number>();
    const names = sourceNamer();
    eachSample(profile, (f, name, ms) => {
      const key = f.url === '' ? name : `${name} (${basename(fileOf(f, names))})`;
      self.set(key, (self.get(key) ?? 0) + ms);
    });
    return [...self].map(([fn, total]) => ({ fn, ms: total / runs })).sort((a, b) => b.ms - a.ms);
  } finally {
    session.disconnect();
  }
}

/** A running profile of everything this process does, until `stop`. */
export interface ProfileWindow {
  /** Stops the profiler; returns self time by function and by file or package, largest first. */
  stop(): Promise<{ readonly byFunction: SelfTime[]; readonly byFile: SelfTime[] }>;
}

/** The package a `node_modules` file belongs to, or the file's own name. */
function ownerOf(url: string): string {
  const at = url.lastIndexOf('node_modules/');
  if (at < 0) return basename(url);
  const rest = url.slice(at + 'node_modules/'.length).split('/');
  return rest[0]?.startsWith('@') === true ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? url);
}

/**
 * Profiles the whole process (asynchronous work included) from now until `stop()`, so a benchmark
 * can show where a timed window's time goes: by function, and by file or npm package. V8 samples on
 * wall time: a native call during which the OS ran another process (a socket write that wakes its
 * reader on the same CPU) counts as that call's self time, so native frames are shown with their
 * callers and the window's CPU figure, not the profile, is what a goal is judged on.
 */
export async function profileWindow(): Promise<ProfileWindow> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = (await session.post('Profiler.stop')) as { profile: Profile };
      session.disconnect();
      const byId = new Map(profile.nodes.map((n) => [n.id, n]));
      const names = sourceNamer();
      const parent = new Map<number, number>();
      for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
      /** The nearest caller with a source file, for native frames (which have none). */
      const caller = (id: number): string => {
        const chain: string[] = [];
        for (let p = parent.get(id); p !== undefined && chain.length < 16; p = parent.get(p)) {
          const f = byId.get(p)?.callFrame;
          if (f !== undefined && f.url !== '')
            chain.push(`${f.functionName || '(anonymous)'} (${ownerOf(fileOf(f, names))})`);
        }
        return chain.join(' ← ') || '?';
      };
      const fns = new Map<string, number>();
      const files = new Map<string, number>();
      eachSample(profile, (f, name, ms, id) => {
        const file = f.url === '' ? name : ownerOf(fileOf(f, names));
        const key = f.url === '' ? `${name} ← ${caller(id)}` : `${name} (${file})`;
        fns.set(key, (fns.get(key) ?? 0) + ms);
        files.set(file, (files.get(file) ?? 0) + ms);
      });
      const sorted = (m: Map<string, number>): SelfTime[] =>
        [...m].map(([fn, ms]) => ({ fn, ms })).sort((a, b) => b.ms - a.ms);
      return { byFunction: sorted(fns), byFile: sorted(files) };
    },
  };
}
