/**
 * `npm run bench:record [-- <record.json>] [-- --allow-dirty]`: makes a run of `npm run bench` the
 * recorded baseline. Copies the record (default bench-results/latest.json), its Markdown table and
 * its charts into bench/baseline/ (`full.*` or `quick.*` by the record's mode) and, from a full
 * run, rewrites README's performance table (bench/record.ts makes it). A run of a tree with
 * uncommitted changes is refused: the baseline comes from a clean clone.
 * @module
 */
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { format, resolveConfig } from 'prettier';
import {
  baselineName,
  commitOf,
  parseRecord,
  readmeTable,
  replaceBetweenMarkers,
} from '../bench/record.js';
import { ROOT } from './bundle-options.js';

/** What to record, and where the repository is. */
export interface RecordOptions {
  /** The repository: bench/baseline/ and README.md are under it. */
  readonly root: string;
  /** The run's record; its `.md` and `-<bench>.svg` files sit beside it. */
  readonly from: string;
  /** Record a run of a changed tree anyway (for trying the command, not for the baseline). */
  readonly allowDirty?: boolean;
}

/** Records the run; the lines say what was written. */
export async function recordBaseline(opts: RecordOptions): Promise<string[]> {
  const text = readFileSync(opts.from, 'utf8');
  const record = parseRecord(JSON.parse(text));
  const commit = commitOf(record);
  if (commit.endsWith('-dirty') && opts.allowDirty !== true)
    throw new Error(
      `the run was made from a tree with uncommitted changes (${commit}): run \`npm run bench\` in a clean clone, or pass --allow-dirty to try the command`,
    );
  // README first: a README without its markers stops the command before anything is copied.
  const readme = join(opts.root, 'README.md');
  const table =
    record.mode === 'full'
      ? replaceBetweenMarkers(readFileSync(readme, 'utf8'), readmeTable(record))
      : undefined;
  const dir = dirname(opts.from);
  const stem = basename(opts.from, extname(opts.from));
  const baseline = join(opts.root, 'bench', 'baseline');
  mkdirSync(baseline, { recursive: true });
  const written: string[] = [];
  for (const file of readdirSync(dir).sort()) {
    const name = baselineName(file, stem, record.mode);
    if (name === undefined) continue;
    const to = join(baseline, name);
    // The recorded run itself (`npm run bench:record -- bench/baseline/full.json`): README only.
    if (resolve(dir, file) === resolve(to)) continue;
    if (name.endsWith('.json')) {
      // As it was written, formatted as `npm run lint` checks it.
      const config = (await resolveConfig(to)) ?? {};
      writeFileSync(to, await format(text, { ...config, filepath: to }));
    } else copyFileSync(join(dir, file), to);
    written.push(`bench/baseline/${name}`);
  }
  if (table === undefined)
    return [...written, 'README.md left as it is: its table shows a full run, this one is quick'];
  writeFileSync(readme, table);
  return [...written, 'README.md (performance table)'];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const from = resolve(
    args.find((a) => !a.startsWith('--')) ?? join(ROOT, 'bench-results', 'latest.json'),
  );
  const lines = await recordBaseline({
    root: ROOT,
    from,
    allowDirty: args.includes('--allow-dirty'),
  });
  console.log(`recorded ${from}:\n${lines.map((l) => `  ${l}`).join('\n')}`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href)
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
