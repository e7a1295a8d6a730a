/**
 * Go `time.Duration` strings (`30m`, `1h30m`, `1.5h`), as `reclaim.ttl` is written.
 * @module
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)/y;

/**
 * Milliseconds of a Go duration string, or undefined when Go's `time.ParseDuration` would refuse it.
 * Signs are refused too: a negative ttl means nothing for a pool.
 */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (text === '') return undefined;
  PART.lastIndex = 0;
  let total = 0;
  let pos = 0;
  while (pos < text.length) {
    PART.lastIndex = pos;
    const m = PART.exec(text);
    if (m === null) return undefined;
    const [whole, num = '', unit = ''] = m;
    if (num === '' || num === '.') return undefined;
    total += Number(num) * (UNIT_MS[unit] ?? NaN);
    pos += whole.length;
  }
  return Number.isFinite(total) ? total : undefined;
}
