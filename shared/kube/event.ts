/**
 * The events.k8s.io/v1 Event vmpool records about a pool.
 * @module
 */
import { hostname } from 'node:os';
import { API_VERSION } from '../api/index.js';
import type { EventPool, PoolEvent } from './types.js';

/** `reportingController` of every Event vmpool records. */
export const REPORTING_CONTROLLER = 'vmpool';

/** The API server's validation limits (events.k8s.io/v1). */
const MAX_NOTE = 1024;
const MAX_FIELD = 128;

/** This replica's name for `reportingInstance`: `$POD_NAME`, else `$HOSTNAME`, else the hostname. */
export function defaultReportingInstance(env: NodeJS.ProcessEnv = process.env): string {
  const name = env.POD_NAME ?? env.HOSTNAME ?? hostname();
  return `${REPORTING_CONTROLLER}-${name}`.slice(0, MAX_FIELD);
}

function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 3)}...`;
}

/** An events.k8s.io/v1 Event as sent. */
export interface PoolEventBody {
  readonly apiVersion: 'events.k8s.io/v1';
  readonly kind: 'Event';
  readonly metadata: { readonly name: string; readonly namespace?: string };
  /** A MicroTime: RFC 3339 with six fractional digits. */
  readonly eventTime: string;
  readonly reportingController: string;
  readonly reportingInstance: string;
  readonly action: string;
  readonly reason: string;
  readonly note: string;
  readonly type: 'Normal' | 'Warning';
  readonly regarding: Readonly<Record<string, string>>;
}

/**
 * The Event body. `eventTime` is a MicroTime (the API server rejects second precision); the name is
 * `<pool>.<hex nanoseconds>` as client-go's recorder does, unique enough per pool.
 */
export function poolEventBody(
  pool: EventPool,
  event: PoolEvent,
  reportingInstance: string,
  now: Date = new Date(),
): PoolEventBody {
  const name = pool.metadata.name ?? 'unknown';
  return eventBody(
    {
      apiVersion: pool.apiVersion ?? API_VERSION,
      kind: pool.kind ?? 'VirtualMachinePool',
      name,
      ...(pool.metadata.namespace === undefined ? {} : { namespace: pool.metadata.namespace }),
      ...(pool.metadata.uid === undefined ? {} : { uid: pool.metadata.uid }),
      ...(pool.metadata.resourceVersion === undefined
        ? {}
        : { resourceVersion: pool.metadata.resourceVersion }),
    },
    event,
    reportingInstance,
    now,
  );
}

/** What an Event is about (`regarding`): any namespaced object, a pool or a claim. */
export interface EventTarget {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly resourceVersion?: string;
}

/** The Event body about `regarding` (see {@link poolEventBody}). */
export function eventBody(
  regarding: EventTarget,
  event: PoolEvent,
  reportingInstance: string,
  now: Date = new Date(),
): PoolEventBody {
  const nanos = BigInt(now.getTime()) * 1_000_000n;
  const { name, namespace } = regarding;
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: {
      name: `${name}.${nanos.toString(16)}${Math.floor(Math.random() * 0x1000).toString(16)}`,
      ...(namespace === undefined ? {} : { namespace }),
    },
    eventTime: now.toISOString().replace(/Z$/, '000Z'),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance,
    action: clip(event.action, MAX_FIELD),
    reason: clip(event.reason, MAX_FIELD),
    note: clip(event.note, MAX_NOTE),
    type: event.type,
    regarding: { ...regarding },
  };
}
