/**
 * kubectl's manners on a closed pipe: `kubectl vmpool status … | head` ends quietly with status 0
 * once the reader has gone, instead of a stack trace about EPIPE.
 * @module
 */

/** The part of a writable stream this needs. */
export interface ErrorSource {
  on(event: 'error', listener: (err: NodeJS.ErrnoException) => void): unknown;
}

/**
 * Ends the process quietly (`exit(0)`) when `stream`'s reader has gone (EPIPE); any other write
 * error is told on `err` and ends it with 1.
 */
export function quietOnClosedPipe(
  stream: ErrorSource,
  exit: (code: number) => void,
  err: (line: string) => void,
): void {
  stream.on('error', (e) => {
    if (e.code === 'EPIPE') {
      exit(0);
      return;
    }
    err(`error: ${e.message}`);
    exit(1);
  });
}
