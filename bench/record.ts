/**
 * README's performance table, made from a run's record (bench-results/latest.json): every row the
 * run judged, with the floor it is measured against, and the run it comes from. Pure: the file
 * work is scripts/bench-record.ts's.
 * @module
 */
import { z } from 'zod';
import type { Row } from './report.js';

/** The README's table sits between these two lines; everything else of README is left as is. */
export const START = '<!-- bench:goals -->';
export const END = '<!-- /bench:goals -->';

const RowModel = z.looseObject({
  bench: z.string(),
  figure: z.string(),
  value: z.string(),
  goal: z.string(),
  floor: z.string().optional(),
  pass: z.boolean().optional(),
});

const RecordModel = z.looseObject({
  when: z.string(),
  mode: z.enum(['full', 'quick']),
  /** The machine as bench/run.ts states it: CPUs, memory, node, commit, mode, load. */
  env: z.string(),
  /** Short commit, `-dirty` when the tree had changes; runs before it have it in `env` only. */
  commit: z.string().optional(),
  table: z.array(RowModel),
});

/** What the recorder reads of a record; bench/run.ts writes much more. */
export type RunRecord = z.infer<typeof RecordModel>;

/** The record in `json`, or an error naming what is missing. */
export function parseRecord(json: unknown): RunRecord {
  const parsed = RecordModel.safeParse(json);
  if (parsed.success) return parsed.data;
  const where = parsed.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`);
  throw new Error(`not a bench record (bench-results/latest.json): ${where.join('; ')}`);
}

/** The run's commit: its own field, else the short hash its `env` line names. */
export function commitOf(record: RunRecord): string {
  return (
    record.commit ?? /(?:^|, )([0-9a-f]{7,40}(?:-dirty)?)(?:,|$)/.exec(record.env)?.[1] ?? 'unknown'
  );
}

/** One line of README's table. */
export interface GoalRow {
  /** The benchmark's heading, on its first row only. */
  readonly bench: string;
  readonly figure: string;
  readonly goal: string;
  readonly value: string;
  /** What the figure is measured against, `name: value`; `—` for an absolute goal. */
  readonly floor: string;
  readonly pass: boolean;
}

/**
 * A benchmark's heading starts with its number (`1 scale-up 0→200`, `4d bounded memory`); other
 * text in the bench column (standby's platform timings) is a note under the same heading.
 */
const isHeading = (bench: string): boolean => /^\d/.test(bench);

/** The name a row is measured against: `≤ 1.10× floor`, `< no standby`, or `vmpool / best raw loop`. */
function reference(row: Row): string | undefined {
  const inGoal = /^[<≤]\s*(?:\d+(?:\.\d+)?×\s*)?([A-Za-z].*)$/.exec(row.goal)?.[1];
  if (inGoal !== undefined) return inGoal;
  const slash = row.figure.lastIndexOf(' / ');
  return slash < 0 ? undefined : row.figure.slice(slash + 3);
}

/**
 * The floor of `rows[i]`: its own `floor` field; else, for records made before it, the row of the
 * same benchmark its goal or figure names (nearest before it, else after); else `—`.
 */
function floorOf(rows: readonly Row[], i: number, first: number, end: number): string {
  const row = rows[i];
  if (row === undefined) return '—';
  if (row.floor !== undefined) return row.floor;
  const name = reference(row)?.toLowerCase();
  if (name === undefined) return '—';
  const names = (j: number): boolean =>
    j !== i && (rows[j]?.figure.toLowerCase().startsWith(name) ?? false);
  const before = Array.from({ length: i - first }, (_, k) => i - 1 - k).find(names);
  const after = Array.from({ length: end - i - 1 }, (_, k) => i + 1 + k).find(names);
  const match = rows[before ?? after ?? -1];
  return match === undefined ? '—' : `${match.figure}: ${match.value}`;
}

/** The rows the run judged (those with a pass or fail), each with its floor and benchmark. */
export function goalRows(rows: readonly Row[]): GoalRow[] {
  const starts = rows.flatMap((r, i) => (i === 0 || isHeading(r.bench) ? [i] : []));
  const out: GoalRow[] = [];
  starts.forEach((first, s) => {
    const end = starts[s + 1] ?? rows.length;
    let heading = rows[first]?.bench ?? '';
    for (let i = first; i < end; i++) {
      const row = rows[i];
      if (row?.pass === undefined) continue;
      out.push({
        bench: heading,
        figure: row.figure,
        goal: row.goal,
        value: row.value,
        floor: floorOf(rows, i, first, end),
        pass: row.pass,
      });
      heading = '';
    }
  });
  return out;
}

/** The CPU placements the run states (its `CPUs` rows), once each. */
function placements(rows: readonly Row[]): string[] {
  return [...new Set(rows.filter((r) => r.figure === 'CPUs').map((r) => r.value))];
}

/** `2026-11-30T23:41:12.406Z` as `2026-11-30 23:41 UTC`; anything else as it is. */
const when = (iso: string): string =>
  /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(iso) ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : iso;

/** The line under the table: which run, when, where. */
export function runLine(record: RunRecord): string {
  const cpus = placements(record.table);
  const passed = record.table.filter((r) => r.pass === true).length;
  const judged = record.table.filter((r) => r.pass !== undefined).length;
  return [
    `${String(passed)} of ${String(judged)} goals met in the ${record.mode} run of commit`,
    `\`${commitOf(record)}\` on ${when(record.when)}; CPU placement:`,
    `${cpus.length === 0 ? 'not recorded' : cpus.join('; ')}; machine: ${record.env}.`,
  ].join(' ');
}

const cell = (x: string): string => x.replace(/\|/g, '\\|');

/** README's table and its run line, as Markdown. */
export function readmeTable(record: RunRecord): string {
  const lines = [
    '| bench | figure | goal | value | floor | result |',
    '|---|---|---|---|---|---|',
    ...goalRows(record.table).map(
      (r) =>
        `| ${[r.bench, r.figure, r.goal, r.value, r.floor].map(cell).join(' | ')} | ${r.pass ? 'PASS' : '**FAIL**'} |`,
    ),
  ];
  return `${lines.join('\n')}\n\n${runLine(record)}\n`;
}

/** `readme` with the text between its markers replaced by `content`; an error without them. */
export function replaceBetweenMarkers(readme: string, content: string): string {
  const count = (m: string) => readme.split(m).length - 1;
  if (count(START) !== 1 || count(END) !== 1)
    throw new Error(
      `README.md needs exactly one \`${START}\` line and one \`${END}\` line around its performance table (found ${String(count(START))} and ${String(count(END))})`,
    );
  const from = readme.indexOf(START) + START.length;
  const to = readme.indexOf(END);
  if (to < from) throw new Error(`README.md: \`${END}\` comes before \`${START}\``);
  return `${readme.slice(0, from)}\n${content}${readme.slice(to)}`;
}

/**
 * The baseline's name of a run's file, the record being `<stem>.json`: `latest.json` → `full.json`,
 * `latest.md` → `full.md`, `latest-gc.svg` → `gc.svg` (a quick run's charts `quick-gc.svg`, beside
 * the full run's); undefined for a file of another run or none.
 */
export function baselineName(
  file: string,
  stem: string,
  mode: RunRecord['mode'],
): string | undefined {
  if (file === `${stem}.json` || file === `${stem}.md`) return `${mode}${file.slice(stem.length)}`;
  if (!file.startsWith(`${stem}-`)) return undefined;
  const chart = /^([a-z0-9-]+)\.svg$/.exec(file.slice(stem.length + 1))?.[1];
  if (chart === undefined) return undefined;
  return mode === 'full' ? `${chart}.svg` : `quick-${chart}.svg`;
}
