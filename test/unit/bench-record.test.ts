/**
 * `npm run bench:record`: README's performance table lists every judged row of a run with its goal,
 * value, the floor it is measured against and pass/fail; rewriting it touches only the text between
 * its markers and is idempotent; the run's files land in bench/baseline/ under the mode's names; a
 * dirty run is refused.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  END,
  START,
  baselineName,
  commitOf,
  goalRows,
  parseRecord,
  readmeTable,
  replaceBetweenMarkers,
} from '../../bench/record.js';
import type { Row } from '../../bench/report.js';
import { recordBaseline } from '../../scripts/bench-record.js';

const ROWS: Row[] = [
  {
    bench: '1 scale-up 0→200, separate CPUs',
    figure: 'CPUs',
    value: 'plane 0, clients 1',
    goal: '',
  },
  { bench: '', figure: 'best raw loop (8 in flight)', value: '1000 ms', goal: '' },
  { bench: '', figure: 'vmpool / best raw loop', value: '1.05×', goal: '≤ 1.10×', pass: true },
  {
    bench: '',
    figure: 'CPU, vmpool / raw loop: etcd',
    value: '1.30×',
    goal: '≤ 1.2×',
    floor: "raw loop's etcd: 900 ms CPU",
    pass: false,
  },
  { bench: '', figure: 'objects/s', value: '600', goal: 'context' },
  {
    bench: '6 cold start (median)',
    figure: 'image start: spawn → first event, / floor',
    value: '130 ms',
    goal: '≤ 1.10× floor',
    pass: true,
  },
  { bench: '', figure: 'its peak RSS', value: '60 MiB', goal: '≤ 64 MiB', pass: true },
  { bench: '', figure: 'floor: node, TLS, one list', value: '120 ms', goal: '' },
  { bench: '8 standby', figure: 'no standby', value: '6.84 s', goal: '' },
  {
    bench: 'provisioning 5 s',
    figure: 'standby Running',
    value: '0.10 s',
    goal: '< no standby',
    pass: true,
  },
  { bench: '9 other', figure: 'a / best raw loop', value: '2 | 3', goal: '≤ 1×', pass: false },
];

const RECORD = {
  when: '2026-12-01T10:20:30.400Z',
  mode: 'full',
  env: '2 CPUs, 24 GiB, node v20.20.2, abc1234, full, load 0.50 0.40 0.30 at start',
  replicaSetKcmFlags: ['--leader-elect=false'],
  table: ROWS,
};

const TABLE = `| bench | figure | goal | value | floor | result |
|---|---|---|---|---|---|
| 1 scale-up 0→200, separate CPUs | vmpool / best raw loop | ≤ 1.10× | 1.05× | best raw loop (8 in flight): 1000 ms | PASS |
|  | CPU, vmpool / raw loop: etcd | ≤ 1.2× | 1.30× | raw loop's etcd: 900 ms CPU | **FAIL** |
| 6 cold start (median) | image start: spawn → first event, / floor | ≤ 1.10× floor | 130 ms | floor: node, TLS, one list: 120 ms | PASS |
|  | its peak RSS | ≤ 64 MiB | 60 MiB | — | PASS |
| 8 standby | standby Running | < no standby | 0.10 s | no standby: 6.84 s | PASS |
| 9 other | a / best raw loop | ≤ 1× | 2 \\| 3 | — | **FAIL** |

4 of 6 goals met in the full run of commit \`abc1234\` on 2026-12-01 10:20 UTC; CPU placement: plane 0, clients 1; machine: 2 CPUs, 24 GiB, node v20.20.2, abc1234, full, load 0.50 0.40 0.30 at start.
`;

const README = `# vmpool\n\nIntro.\n\n## Performance\n\n${START}\nold table\n${END}\n\nHow to refresh.\n`;

describe('README performance table', () => {
  it('lists the judged rows with goal, value, floor and result, and the run they come from', () => {
    expect(readmeTable(parseRecord(RECORD))).toBe(TABLE);
  });

  it('takes a floor from the row itself, the row its figure or goal names, or none', () => {
    const floors = goalRows(ROWS).map((r) => r.floor);
    // Preceding row, own field, following row (named by the goal), absolute goal, standby's
    // reference across a note row, and a name with no such row in its own benchmark.
    expect(floors).toEqual([
      'best raw loop (8 in flight): 1000 ms',
      "raw loop's etcd: 900 ms CPU",
      'floor: node, TLS, one list: 120 ms',
      '—',
      'no standby: 6.84 s',
      '—',
    ]);
  });

  it('reads the commit from the record, else from its env line', () => {
    expect(commitOf(parseRecord(RECORD))).toBe('abc1234');
    expect(commitOf(parseRecord({ ...RECORD, commit: 'def5678-dirty' }))).toBe('def5678-dirty');
  });

  it('rewrites only the text between the markers, the same way twice', () => {
    const once = replaceBetweenMarkers(README, TABLE);
    expect(once).toBe(
      `# vmpool\n\nIntro.\n\n## Performance\n\n${START}\n${TABLE}${END}\n\nHow to refresh.\n`,
    );
    expect(replaceBetweenMarkers(once, TABLE)).toBe(once);
  });

  it('refuses a README without its markers, or with them twice or reversed', () => {
    expect(() => replaceBetweenMarkers('# vmpool\n', TABLE)).toThrow(
      /exactly one `<!-- bench:goals -->` line and one `<!-- \/bench:goals -->` line.*found 0 and 0/,
    );
    expect(() => replaceBetweenMarkers(`${README}${START}\n`, TABLE)).toThrow(/found 2 and 1/);
    expect(() => replaceBetweenMarkers(`${END}\n${START}\n`, TABLE)).toThrow(/comes before/);
  });

  it('refuses a file that is not a record, naming what is missing', () => {
    expect(() => parseRecord({ when: 'x', mode: 'slow', env: '' })).toThrow(
      /not a bench record.*mode.*table/,
    );
  });

  it('names the baseline files by the run mode', () => {
    expect(baselineName('latest.json', 'latest', 'full')).toBe('full.json');
    expect(baselineName('latest.md', 'latest', 'quick')).toBe('quick.md');
    expect(baselineName('latest-scaleup.svg', 'latest', 'full')).toBe('scaleup.svg');
    expect(baselineName('latest-scaleup.svg', 'latest', 'quick')).toBe('quick-scaleup.svg');
    expect(baselineName('other.json', 'latest', 'full')).toBeUndefined();
    expect(baselineName('latest-build', 'latest', 'full')).toBeUndefined();
  });
});

describe('npm run bench:record', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  /** A repository with a README and a run's output in bench-results/. */
  function repo(record: object = RECORD): { root: string; from: string } {
    const root = mkdtempSync(join(tmpdir(), 'bench-record-'));
    dirs.push(root);
    const results = join(root, 'bench-results');
    mkdirSync(results);
    writeFileSync(join(root, 'README.md'), README);
    writeFileSync(join(results, 'latest.json'), JSON.stringify(record));
    writeFileSync(join(results, 'latest.md'), '| table |\n');
    writeFileSync(join(results, 'latest-scaleup.svg'), '<svg/>\n');
    writeFileSync(join(results, 'notes.txt'), 'not recorded\n');
    return { root, from: join(results, 'latest.json') };
  }
  const read = (root: string, path: string) => readFileSync(join(root, path), 'utf8');

  it('copies a full run into bench/baseline/ and rewrites README, idempotently', async () => {
    const { root, from } = repo();
    const written = await recordBaseline({ root, from });
    expect(written).toEqual([
      'bench/baseline/scaleup.svg',
      'bench/baseline/full.json',
      'bench/baseline/full.md',
      'README.md (performance table)',
    ]);
    expect(JSON.parse(read(root, 'bench/baseline/full.json'))).toEqual(RECORD);
    // Formatted (prettier), not one long line.
    expect(read(root, 'bench/baseline/full.json')).toMatch(/^\{\n {2}"when": /);
    expect(read(root, 'bench/baseline/full.md')).toBe('| table |\n');
    expect(read(root, 'bench/baseline/scaleup.svg')).toBe('<svg/>\n');
    expect(existsSync(join(root, 'bench/baseline/notes.txt'))).toBe(false);
    const readme = read(root, 'README.md');
    expect(readme).toBe(replaceBetweenMarkers(README, TABLE));
    await recordBaseline({ root, from });
    expect(read(root, 'README.md')).toBe(readme);
  });

  it('rewrites README from the recorded run itself, its files left as they are', async () => {
    const { root, from } = repo();
    await recordBaseline({ root, from });
    writeFileSync(join(root, 'README.md'), README);
    const json = read(root, 'bench/baseline/full.json');
    const written = await recordBaseline({ root, from: join(root, 'bench/baseline/full.json') });
    expect(written).toEqual(['README.md (performance table)']);
    expect(read(root, 'bench/baseline/full.json')).toBe(json);
    expect(read(root, 'bench/baseline/full.md')).toBe('| table |\n');
    expect(read(root, 'README.md')).toBe(replaceBetweenMarkers(README, TABLE));
  });

  it('keeps a quick run as quick.* and leaves README alone', async () => {
    const { root, from } = repo({ ...RECORD, mode: 'quick' });
    const written = await recordBaseline({ root, from });
    expect(written).toContain('bench/baseline/quick.json');
    expect(written).toContain('bench/baseline/quick-scaleup.svg');
    expect(existsSync(join(root, 'bench/baseline/full.json'))).toBe(false);
    expect(read(root, 'README.md')).toBe(README);
  });

  it('stops before copying anything when README has no markers', async () => {
    const { root, from } = repo();
    writeFileSync(join(root, 'README.md'), '# vmpool\n');
    await expect(recordBaseline({ root, from })).rejects.toThrow(/bench:goals/);
    expect(existsSync(join(root, 'bench/baseline'))).toBe(false);
  });

  it('refuses a run of a changed tree unless told to', async () => {
    const { root, from } = repo({ ...RECORD, commit: 'abc1234-dirty' });
    await expect(recordBaseline({ root, from })).rejects.toThrow(/clean clone/);
    expect(existsSync(join(root, 'bench/baseline'))).toBe(false);
    expect(read(root, 'README.md')).toBe(README);
    await recordBaseline({ root, from, allowDirty: true });
    expect(read(root, 'README.md')).toContain('`abc1234-dirty`');
  });
});
