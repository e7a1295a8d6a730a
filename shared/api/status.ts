/**
 * metav1.Status, the answer of the aggregated API (kubectl prints its message and reason), built in
 * one place with one group name. Its HTTP forms are in shared/http/status.ts.
 * @module
 */
import { GROUP } from './meta.js';

/** The resource every Status of vmpool is about. */
const KIND = 'virtualmachinepools';

/** A cause of a Status: one target's outcome, or one field's problem. */
export interface StatusCause {
  readonly reason: string;
  readonly field: string;
  readonly message: string;
}

/** A metav1.Status. */
export interface Status {
  readonly apiVersion: 'v1';
  readonly kind: 'Status';
  readonly metadata: Record<string, never>;
  readonly status: 'Success' | 'Failure';
  readonly code: number;
  readonly reason?: string;
  readonly message: string;
  readonly details?: {
    readonly name: string;
    readonly group: string;
    readonly kind: string;
    readonly causes?: readonly StatusCause[];
  };
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'RequestEntityTooLarge',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/** The metav1.Status reason of an HTTP status code (`NotFound` for 404), as kubectl names it. */
export function statusReason(code: number): string | undefined {
  return REASONS[code];
}

function details(name: string, causes?: readonly StatusCause[]): Status['details'] {
  return { name, group: GROUP, kind: KIND, ...(causes === undefined ? {} : { causes }) };
}

/** A failure Status with the conventional reason for its code; `name` is the pool concerned. */
export function statusFailure(code: number, message: string, name = ''): Status {
  return {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: {},
    status: 'Failure',
    code,
    reason: REASONS[code] ?? 'InternalError',
    message,
    ...(name === '' ? {} : { details: details(name) }),
  };
}

/** A success Status (201: the request was carried out) listing what happened to each target. */
export function statusSuccess(
  message: string,
  name: string,
  causes: readonly StatusCause[],
): Status {
  return {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: {},
    status: 'Success',
    code: 201,
    message,
    details: details(name, causes),
  };
}

/** The API server's words for a pool that does not exist. */
export function poolNotFound(name: string): Status {
  return statusFailure(404, `${KIND}.${GROUP} "${name}" not found`, name);
}
