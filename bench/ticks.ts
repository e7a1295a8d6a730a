/**
 * A function of the benchmarks in its own process, started as the image starts it, fed PingSource
 * ticks: each tick's time, API requests by verb (from its /metrics) and the process's peak RSS.
 * @module
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pingInit } from '../local/events.js';

/** `vmpool_api_requests_total` by verb, from a Prometheus text page. */
export function requestsByVerb(page: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of page.matchAll(/^vmpool_api_requests_total\{([^}]*)\} (\d+)/gm)) {
    const verb = /verb="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '';
    out[verb] = (out[verb] ?? 0) + Number(m[2]);
  }
  return out;
}

const minus = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(a)
      .map(([k, v]) => [k, v - (b[k] ?? 0)] as const)
      .filter(([, v]) => v > 0),
  );

const READS = new Set(['get', 'list']);

/** One event delivered to a function in its own process. */
export interface FunctionTick {
  readonly ms: number;
  /** Requests of the tick by verb (from the function's /metrics). */
  readonly requests: Record<string, number>;
  readonly writes: number;
  /** VmHWM of the process after the tick: its start included. */
  readonly peakRssMiB: number;
}

/**
 * Starts `bundle` as the image does (`node --max-semi-space-size=1`, then `flags`), delivers `ticks`
 * PingSource events one after another, and reads its peak RSS after them.
 */
export async function functionTicks(
  bundle: string,
  kubeconfigPath: string,
  ticks: number,
  log: (l: string) => void,
  what: string,
  flags: readonly string[] = [],
): Promise<FunctionTick[]> {
  const child = spawn(process.execPath, ['--max-semi-space-size=1', ...flags, bundle], {
    env: { PATH: process.env.PATH, KUBECONFIG: kubeconfigPath, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`${what}: no "listening" line in 20 s`));
      }, 20_000);
      child.on('exit', (code) => {
        reject(new Error(`${what} exited with ${String(code)}`));
      });
      for (const stream of [child.stdout, child.stderr])
        createInterface({ input: stream }).on('line', (line) => {
          const m = /"port":(\d+)/.exec(line);
          if (m !== null && line.includes('listening')) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
    });
    const base = `http://127.0.0.1:${port}`;
    const metrics = async () => requestsByVerb(await (await fetch(`${base}/metrics`)).text());
    const out: FunctionTick[] = [];
    for (let i = 0; i < ticks; i++) {
      const before = await metrics();
      const s = performance.now();
      const res = await fetch(`${base}/`, {
        ...pingInit({}, `/bench/${what}`),
        signal: AbortSignal.timeout(600_000),
      });
      await res.arrayBuffer();
      const ms = performance.now() - s;
      if (res.status >= 300) throw new Error(`${what} tick answered ${res.status}`);
      const requests = minus(await metrics(), before);
      const status = readFileSync(`/proc/${child.pid ?? 0}/status`, 'utf8');
      const peakRssMiB = Math.round(Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 1024);
      const writes = Object.entries(requests)
        .filter(([verb]) => !READS.has(verb))
        .reduce((n, [, v]) => n + v, 0);
      out.push({ ms, requests, writes, peakRssMiB });
      log(
        `${what} tick ${i + 1}/${ticks}: ${ms.toFixed(0)} ms, peak RSS ${peakRssMiB} MiB, ${JSON.stringify(requests)}`,
      );
    }
    return out;
  } finally {
    child.kill('SIGKILL');
  }
}
