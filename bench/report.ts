/**
 * The benchmark's outputs: a table with goals and pass/fail, the JSON record and a hand-drawn SVG.
 * @module
 */

/** One line of the table. */
export interface Row {
  readonly bench: string;
  readonly figure: string;
  readonly value: string;
  readonly goal: string;
  /**
   * What a ratio is measured against, `name: value` (README's table shows it); undefined for an
   * absolute goal, or left to bench/record.ts to find among the rows.
   */
  readonly floor?: string;
  /** undefined: informational, no goal. */
  readonly pass?: boolean;
}

/**
 * Columns aligned as text under a dashed rule; `right(i)` right-aligns column i (numbers), the rest
 * are left-aligned.
 */
export function aligned(
  head: readonly string[],
  rows: readonly (readonly string[])[],
  right: (column: number) => boolean = () => false,
): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (c: readonly string[]): string =>
    c
      .map((x, i) => (right(i) ? x.padStart(widths[i] ?? 0) : x.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** The table as aligned text. */
export function table(rows: readonly Row[]): string {
  const head = ['bench', 'figure', 'value', 'goal', 'result'];
  const cells = rows.map((r) => [
    r.bench,
    r.figure,
    r.value,
    r.goal,
    r.pass === undefined ? '' : r.pass ? 'PASS' : 'FAIL',
  ]);
  return aligned(head, cells);
}

/** The table as Markdown (docs/performance.md is pasted from it). */
export function markdown(rows: readonly Row[]): string {
  const cell = (x: string) => x.replace(/\|/g, '\\|');
  const lines = [
    '| bench | figure | value | goal | result |',
    '|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${cell(r.bench)} | ${cell(r.figure)} | ${cell(r.value)} | ${cell(r.goal)} | ${r.pass === undefined ? '' : r.pass ? 'PASS' : '**FAIL**'} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/** Bars of one group. */
export interface BarGroup {
  readonly label: string;
  readonly bars: ReadonlyArray<{ readonly name: string; readonly value: number }>;
}

const COLORS = ['#2b6cb0', '#718096', '#dd6b20', '#38a169'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One grouped bar chart at (x, y) of size w×h, as SVG elements. */
function panel(
  title: string,
  unit: string,
  groups: readonly BarGroup[],
  x: number,
  y: number,
  w: number,
  h: number,
): string {
  const max = Math.max(1, ...groups.flatMap((g) => g.bars.map((b) => b.value)));
  const top = y + 30;
  const bottom = y + h - 40;
  const left = x + 50;
  const plotW = w - 60;
  const gw = plotW / Math.max(1, groups.length);
  const out: string[] = [
    `<text x="${x + w / 2}" y="${y + 16}" text-anchor="middle" font-weight="bold">${esc(title)}</text>`,
    `<line x1="${left}" y1="${bottom}" x2="${left + plotW}" y2="${bottom}" stroke="#333"/>`,
    `<line x1="${left}" y1="${top}" x2="${left}" y2="${bottom}" stroke="#333"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    const yy = bottom - ((bottom - top) * i) / 4;
    out.push(
      `<text x="${left - 4}" y="${yy + 4}" text-anchor="end" font-size="10">${Math.round(v)}</text>`,
      `<line x1="${left}" y1="${yy}" x2="${left + plotW}" y2="${yy}" stroke="#eee"/>`,
    );
  }
  out.push(
    `<text x="${x + 12}" y="${(top + bottom) / 2}" font-size="10" transform="rotate(-90 ${x + 12} ${(top + bottom) / 2})" text-anchor="middle">${esc(unit)}</text>`,
  );
  groups.forEach((g, gi) => {
    const bw = (gw * 0.8) / Math.max(1, g.bars.length);
    const gx = left + gi * gw + gw * 0.1;
    g.bars.forEach((b, bi) => {
      const bh = ((bottom - top) * b.value) / max;
      const bx = gx + bi * bw;
      out.push(
        `<rect x="${bx.toFixed(1)}" y="${(bottom - bh).toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${bh.toFixed(1)}" fill="${COLORS[bi % COLORS.length] ?? '#000'}"><title>${esc(`${g.label} ${b.name}: ${Math.round(b.value)} ${unit}`)}</title></rect>`,
        `<text x="${(bx + bw / 2 - 1).toFixed(1)}" y="${(bottom - bh - 3).toFixed(1)}" text-anchor="middle" font-size="9">${Math.round(b.value)}</text>`,
      );
    });
    out.push(
      `<text x="${(gx + gw * 0.4).toFixed(1)}" y="${bottom + 14}" text-anchor="middle" font-size="11">${esc(g.label)}</text>`,
    );
  });
  const names = groups[0]?.bars.map((b) => b.name) ?? [];
  names.forEach((n, i) => {
    const lx = left + i * 110;
    out.push(
      `<rect x="${lx}" y="${bottom + 22}" width="10" height="10" fill="${COLORS[i % COLORS.length] ?? '#000'}"/>`,
      `<text x="${lx + 14}" y="${bottom + 31}" font-size="11">${esc(n)}</text>`,
    );
  });
  return out.join('\n');
}

/** One benchmark's chart: a grouped bar panel with its title, unit and the run's environment. */
export function figure(
  title: string,
  unit: string,
  groups: readonly BarGroup[],
  subtitle: string,
): string {
  const w = Math.max(460, 120 + groups.length * 110);
  const h = 360;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h + 20}" viewBox="0 0 ${w} ${h + 20}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    panel(title, unit, groups, 0, 0, w, h),
    `<text x="${w / 2}" y="${h + 14}" text-anchor="middle" font-size="10" fill="#555">${esc(subtitle)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
