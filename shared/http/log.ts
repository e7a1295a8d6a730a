/**
 * pino JSON logs (no transports: they spawn worker files that an esbuild bundle cannot carry), with a
 * readable line format when a human is watching a terminal.
 * @module
 */
import { pino } from 'pino';
import type { DestinationStream, Logger } from 'pino';
import { keys } from '../api/index.js';
import type { Malformed } from '../api/index.js';

export type { Logger } from 'pino';

/** Fields that may carry credentials; pino replaces their values before anything is written. */
export const REDACTED_PATHS = [
  'authorization',
  'token',
  'password',
  'secret',
  'kubeconfig',
  '*.authorization',
  '*.token',
  '*.password',
  '*.secret',
  '*.bearerToken',
  'headers.authorization',
  'headers.cookie',
  '*.headers.authorization',
  '*.headers.cookie',
];

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Minimum level (default `$LOG_LEVEL` or `info`). */
  readonly level?: string;
  /** Where lines go (default stdout); tests pass a collector. */
  readonly destination?: DestinationStream;
  /** Human-readable lines instead of JSON (default: when stdout is a TTY). */
  readonly pretty?: boolean;
}

const LEVELS: Readonly<Record<number, string>> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** Turns one pino JSON line into `HH:MM:SS.mmm LEVEL name: msg key=value…`. */
export function prettyLine(json: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { time, level, name, msg, ...rest } = rec;
  // pid and hostname are noise on a developer's terminal.
  delete rest.pid;
  delete rest.hostname;
  const at = typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '';
  const lvl = typeof level === 'number' ? (LEVELS[level] ?? String(level)) : '';
  const who = typeof name === 'string' ? ` ${name}:` : '';
  const text = typeof msg === 'string' ? ` ${msg}` : '';
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${at} ${lvl.padEnd(5)}${who}${text}${fields === '' ? '' : ` ${fields}`}\n`;
}

function prettyStream(out: DestinationStream): DestinationStream {
  return {
    write(line: string) {
      out.write(prettyLine(line));
    },
  };
}

/**
 * A logger for one function or module.
 *
 * @param name recorded as `name` on every line
 */
export function createLogger(name: string, opts: LoggerOptions = {}): Logger {
  const out: DestinationStream = opts.destination ?? process.stdout;
  const pretty = opts.pretty ?? process.stdout.isTTY;
  return pino(
    {
      name,
      level: opts.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.epochTime,
    },
    pretty ? prettyStream(out) : out,
  );
}

/** The identity of an event, as logs carry it. */
export interface EventIdentity {
  readonly id: string;
  readonly type: string;
}

/**
 * A child logger for one event: every line carries the event id and type and, once known, the pool
 * key (`namespace/name`).
 */
export function eventLogger(log: Logger, event: EventIdentity, poolKey?: string): Logger {
  return log.child({
    eventId: event.id,
    eventType: event.type,
    ...(poolKey === undefined ? {} : { pool: poolKey }),
  });
}

/**
 * Logs an object a list skipped because its model refused it: which object, the first issue, and
 * the pool it claims by label, so an operator can find and fix it.
 */
export function logMalformed(log: Logger, m: Malformed): void {
  log.warn(
    {
      object: `${m.kind} ${m.namespace === '' ? '' : `${m.namespace}/`}${m.name}`,
      uid: m.uid,
      poolUid: m.labels[keys.poolUid],
      issue: m.issue,
    },
    `skipped a ${m.kind} that does not parse (${m.issue}); only the pool it belongs to waits for it to be fixed`,
  );
}
