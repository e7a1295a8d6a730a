/**
 * Which source file a position of a bundle came from, read from the bundle's source map (version 3,
 * `<bundle>.map` beside it), so a CPU profile of a bundle names the file a function is in, not the
 * bundle.
 * @module
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const DIGIT = new Map(Array.from(BASE64, (c, i) => [c, i]));

/** The numbers of one mapping segment (base64 VLQ: 5 bits a digit, low bit of the value the sign). */
export function decodeSegment(segment: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const c of segment) {
    const d = DIGIT.get(c);
    if (d === undefined) throw new Error(`not a base64 VLQ digit: ${c}`);
    value += (d & 31) * 2 ** shift;
    shift += 5;
    if ((d & 32) !== 0) continue;
    out.push(value % 2 === 1 ? -(value - 1) / 2 : value / 2);
    value = 0;
    shift = 0;
  }
  return out;
}

/** One generated line: the columns where a segment starts, and the source index of each. */
interface Line {
  readonly columns: number[];
  readonly sources: number[];
}

/** Decodes a map's `mappings` into, per generated line, where each source begins. */
export function decodeLines(mappings: string): Line[] {
  let source = 0;
  return mappings.split(';').map((text) => {
    const line: Line = { columns: [], sources: [] };
    let column = 0;
    for (const segment of text.split(',')) {
      if (segment === '') continue;
      const [dc = 0, ds] = decodeSegment(segment);
      column += dc;
      // A segment of one field maps to no source: it ends the one before.
      if (ds === undefined) continue;
      source += ds;
      line.columns.push(column);
      line.sources.push(source);
    }
    return line;
  });
}

/**
 * The source a 0-based line and column fall in: the last segment starting at or before it (a
 * whitespace-minified bundle is a few lines of many thousand segments each, and a profile asks
 * once per sample, so the columns, ascending, are searched by halves).
 */
function sourceAt(lines: readonly Line[], line: number, column: number): number | undefined {
  const l = lines[line];
  if (l === undefined) return undefined;
  let [lo, hi] = [0, l.columns.length];
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((l.columns[mid] ?? 0) <= column) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? undefined : l.sources[lo - 1];
}

/** Maps a script's positions to source paths (as the map names them); undefined without a map. */
export type SourceNamer = (url: string, line: number, column: number) => string | undefined;

/** A {@link SourceNamer} that reads each `file://` script's `.map` once. */
export function sourceNamer(): SourceNamer {
  const maps = new Map<string, { sources: string[]; lines: Line[] } | undefined>();
  const load = (url: string): { sources: string[]; lines: Line[] } | undefined => {
    if (!url.startsWith('file:')) return undefined;
    try {
      const raw = JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8')) as {
        sources?: string[];
        mappings?: string;
      };
      return { sources: raw.sources ?? [], lines: decodeLines(raw.mappings ?? '') };
    } catch {
      return undefined; // No map beside the script: it is named by its own file.
    }
  };
  return (url, line, column) => {
    if (!maps.has(url)) maps.set(url, load(url));
    const map = maps.get(url);
    if (map === undefined) return undefined;
    const i = sourceAt(map.lines, line, column);
    return i === undefined ? undefined : map.sources[i];
  };
}
