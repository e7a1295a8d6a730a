/**
 * Loggers for the tests and the benchmarks, so none of them measures or prints its own logging.
 * @module
 */
import { createLogger } from '../shared/http/index.js';
import type { Logger } from '../shared/http/index.js';

/**
 * A logger named `name`: silent by default, any other `level` to standard output, and with `lines`
 * every line at trace level collected there instead (to scan what was logged).
 */
export function testLog(name: string, level = 'silent', lines?: string[]): Logger {
  if (lines !== undefined)
    return createLogger(name, {
      level: 'trace',
      pretty: false,
      destination: { write: (l: string) => void lines.push(l) },
    });
  if (level === 'silent')
    return createLogger(name, { level, destination: { write: () => undefined } });
  return createLogger(name, { level, pretty: false });
}
