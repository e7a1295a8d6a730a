/**
 * Go durations (`time.ParseDuration`), the form every duration field of vmpool's objects takes.
 * @module
 */
import { z } from 'zod';

/** Go duration strings as `time.ParseDuration` accepts them (`30m`, `1h30m`, `1.5h`). */
const DURATION_PATTERN =
  '^([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*$';

/** What a model says of a string that is not a Go duration (after the field's path). */
export const DURATION_MESSAGE = 'must be a Go duration such as 30m or 2h';

/** A Go duration string field described by `description`. */
export const goDuration = (description: string) =>
  z
    .string()
    .regex(new RegExp(DURATION_PATTERN), { message: DURATION_MESSAGE })
    .describe(description);
