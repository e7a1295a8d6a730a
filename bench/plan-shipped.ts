/**
 * `plan()` timed as the functions ship it. The functions run esbuild bundles; `tsx`, which runs the
 * bench, compiles every closure with a call that names it (`keepNames`), and the domain makes closures
 * per member (sort keys, filters), so under `tsx` plan() paid for a call the image never makes. This
 * bundles bench/plan.ts with the functions' esbuild options (identifiers kept readable for the
 * profile) and runs it in a Node process of its own, started with the image's node flags and
 * environment (`scripts/image-start.ts`).
 * @module
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { bundleAsShipped } from './bundle.js';
import { RUNTIME_ENV, RUNTIME_FLAGS } from '../scripts/image-start.js';
import type { PlanFigures } from './plan.js';

/**
 * Bundles bench/plan.ts into `outdir` as the function bundles are built and returns the figures its
 * `--json` mode prints (a few seconds of CPU-bound work: run it where nothing else competes).
 */
export async function shippedPlanBench(outdir: string): Promise<PlanFigures> {
  const file = join(outdir, 'plan-bench.mjs');
  // As the function bundles, but for the names: the profile reports functions by name, and by
  // the source file the map beside the bundle (as the functions ship one) says they are in.
  await bundleAsShipped('bench/plan.ts', file, true);
  // With the image's flags and environment: under its 1 MiB young generation a plan of 10,000
  // members collects garbage many times over, one of 1,000 hardly once (Node's default is 16 MiB).
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...RUNTIME_FLAGS, file, '--json'],
    { maxBuffer: 16 * 2 ** 20, env: { ...process.env, ...RUNTIME_ENV } },
  );
  const figures = JSON.parse(stdout) as Partial<PlanFigures>;
  if (!Array.isArray(figures.plan) || figures.scaleDown === undefined || !figures.profile)
    throw new Error(`bench/plan.ts --json printed no figures: ${stdout.slice(0, 200)}`);
  return figures as PlanFigures;
}
