/**
 * Starts bench/gc-pass.ts as disk-gc-tick ships: bundled with the functions' esbuild options, run by
 * node with the image's flags and environment. Before it, benchmark 4c timed its passes in the
 * bench process, whose young generation is 16 MiB against the image's 1 MiB: a 20,000-disk pass
 * parses about 30 MB of JSON, and with the image's young generation the same pass took 1.3–2× the
 * CPU, which the figure did not show.
 * @module
 */
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { bundleAsShipped } from './bundle.js';
import { RUNTIME_ENV, RUNTIME_FLAGS } from '../scripts/image-start.js';
import type { PassFigures } from './gc-pass.js';

/** How long the pass process may take to start and make its connection. */
const READY_MS = 60_000;

/** A disk-gc pass process: one pass per call, on its one funnel. */
export interface ShippedPasses {
  /** Runs a pass with the GC's clock at `at` and returns what the process measured. */
  pass(at: Date): Promise<PassFigures>;
  stop(): void;
}

/** Bundles bench/gc-pass.ts into `outdir` and starts it on the control plane of `kubeconfigPath`. */
export async function shippedPasses(
  kubeconfigPath: string,
  outdir: string,
): Promise<ShippedPasses> {
  const file = join(outdir, 'gc-pass.mjs');
  await bundleAsShipped('bench/gc-pass.ts', file);
  const child = spawn(process.execPath, [...RUNTIME_FLAGS, file], {
    env: {
      ...RUNTIME_ENV,
      PATH: process.env.PATH,
      KUBECONFIG: kubeconfigPath,
      LOG_LEVEL: 'info',
    },
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
  const { stdin, stdout, stderr } = child;
  const figures = child.stdio[3] as Readable;
  // The function's log lines, read as a pod's runtime reads them, and dropped.
  stdout.resume();
  let tail = '';
  stderr.on('data', (c: Buffer) => {
    tail = (tail + c.toString('utf8')).slice(-2000);
  });
  const lines = createInterface({ input: figures })[Symbol.asyncIterator]();
  // 'close', not 'exit': stderr is read to its end first, so the error carries the last words.
  const exited = new Promise<never>((_, fail) =>
    child.on('close', (code, signal) => {
      fail(new Error(`gc-pass exited (${String(code ?? signal)}): ${tail}`));
    }),
  );
  exited.catch(() => undefined);
  // A child that died between passes breaks the pipe: `next` reports why, not an uncaught EPIPE.
  stdin.on('error', () => undefined);
  const next = async (): Promise<string> => {
    const line = await Promise.race([lines.next(), exited]);
    if (line.done === true) throw new Error(`gc-pass closed its figures: ${tail}`);
    return line.value;
  };
  // Its connection made before the first pass is timed, whose server CPU would count it otherwise.
  // A child that never gets there is not left behind.
  const ready = new Promise<never>((_, fail) =>
    setTimeout(() => {
      fail(new Error(`gc-pass not ready after ${READY_MS / 1000} s: ${tail}`));
    }, READY_MS).unref(),
  );
  try {
    await Promise.race([next(), ready]);
  } catch (err) {
    child.kill();
    throw err;
  }
  return {
    async pass(at: Date): Promise<PassFigures> {
      stdin.write(`${at.toISOString()}\n`);
      return JSON.parse(await next()) as PassFigures;
    },
    stop(): void {
      stdin.end();
      child.kill();
    },
  };
}
