/**
 * Parsing one CloudEvent from an HTTP request (HTTP protocol binding 1.0, binary and structured
 * mode), validated as the CloudEvents 1.0 JSON schema says. Written out rather than taken from the
 * SDK: the SDK builds an event class, runs a compiled JSON schema and constructs error objects on
 * every event, which made up a fifth of reconcile-pool's CPU per event in a scale-up profile, and it
 * fills in a missing id, specversion and time instead of refusing the event.
 * @module
 */

/** A validated CloudEvent as a plain object; extensions are kept apart from the core attributes. */
export interface ParsedEvent {
  readonly specversion: '1.0';
  readonly id: string;
  readonly source: string;
  readonly type: string;
  readonly subject?: string;
  /** As sent (RFC 3339), when sent. */
  readonly time?: string;
  readonly datacontenttype?: string;
  readonly dataschema?: string;
  /** JSON data, parsed; `undefined` when the event carries none. */
  readonly data: unknown;
  readonly extensions: Readonly<Record<string, string | number | boolean>>;
}

/** Why an event was refused, as the HTTP status to answer with. */
export interface EventRejection {
  readonly ok: false;
  readonly status: 400 | 413 | 415;
  readonly message: string;
}

/** The result of {@link parseCloudEvent}. */
export type EventParse = { readonly ok: true; readonly event: ParsedEvent } | EventRejection;

/** Default cap on an event body: 1 MiB, like the {@link limitBody} middleware. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

const CORE = new Set([
  'specversion',
  'id',
  'source',
  'type',
  'subject',
  'time',
  'datacontenttype',
  'dataschema',
  'data',
  'data_base64',
]);

function reject(status: 400 | 413 | 415, message: string): EventRejection {
  return { ok: false, status, message };
}

function isJsonType(contentType: string): boolean {
  const media = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return media === 'application/json' || media === 'text/json' || media.endsWith('+json');
}

/** Request headers as Node (`IncomingHttpHeaders`) or the web (`Headers`) gives them. */
export type EventHeaders =
  Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

function normalize(headers: EventHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = headers instanceof Headers ? headers.entries() : Object.entries(headers);
  for (const [k, v] of entries)
    if (v !== undefined) out[k.toLowerCase()] = typeof v === 'string' ? v : v.join(', ');
  return out;
}

/** JSON data as a value: a string is parsed as JSON text (binary mode's body, or a structured string). */
function jsonData(
  data: unknown,
  contentType: string | undefined,
): { ok: true; data: unknown } | EventRejection {
  if (data === undefined || data === null || data === '') return { ok: true, data: undefined };
  if (contentType !== undefined && !isJsonType(contentType)) {
    return reject(415, `event data must be JSON, got datacontenttype ${contentType}`);
  }
  if (typeof data !== 'string') return { ok: true, data };
  try {
    return { ok: true, data: JSON.parse(data) as unknown };
  } catch {
    return reject(400, 'event data is not valid JSON');
  }
}

const REQUIRED = ['specversion', 'id', 'source', 'type'] as const;

type Attributes = Record<string, unknown>;

/** Attribute names: lower-case letters and digits (CloudEvents 1.0, "Attribute Naming Convention"). */
const NAME = /^[a-z0-9]+$/;
/** RFC 3339 date-time, as the spec's JSON schema asks of `time`. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
/** A URI-reference has no whitespace or control characters; an absolute URI starts with a scheme. */
const URI_REFERENCE = /^[^\s\p{Cc}]+$/u;
const ABSOLUTE_URI = /^[a-zA-Z][a-zA-Z0-9+.-]*:[^\s\p{Cc}]*$/u;

/** Binary mode: the `ce-` headers, percent-decoded as the HTTP binding asks. */
function fromHeaders(h: Readonly<Record<string, string>>): Attributes | string {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(h)) {
    if (!k.startsWith('ce-')) continue;
    try {
      out[k.slice(3)] = v.includes('%') ? decodeURIComponent(v) : v;
    } catch {
      return `header ${k} is not validly percent-encoded`;
    }
  }
  const type = h['content-type'];
  if (type !== undefined && type !== '') out.datacontenttype = type;
  return out;
}

/** Structured mode: the body's JSON object. */
function fromBody(bodyText: string): Attributes | string {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch (err) {
    return `body is not valid JSON: ${(err as Error).message}`;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return 'a structured event must be a JSON object';
  }
  return body as Attributes;
}

/** What is wrong with the attributes, or undefined (the spec's JSON schema and naming rules). */
function invalid(a: Attributes): string | undefined {
  const missing = REQUIRED.find((k) => a[k] === undefined || a[k] === '');
  if (missing !== undefined) return `missing required CloudEvent attribute ${missing}`;
  if (a.specversion !== '1.0') return `unsupported specversion ${String(a.specversion)}`;
  for (const [k, v] of Object.entries(a)) {
    if (k === 'data' || k === 'data_base64') continue;
    if (!NAME.test(k)) return `invalid attribute name: "${k}"`;
    const scalar = typeof v === 'string' || typeof v === 'boolean' || Number.isInteger(v);
    if (!scalar) return `attribute ${k} must be a string, an integer or a boolean`;
    if (CORE.has(k) && (typeof v !== 'string' || v === '')) {
      return `attribute ${k} must be a non-empty string`;
    }
  }
  if (!URI_REFERENCE.test(a.source as string)) return 'source must be a URI-reference';
  if (a.time !== undefined && !RFC3339.test(a.time as string)) {
    return 'time must be an RFC 3339 timestamp';
  }
  if (a.dataschema !== undefined && !ABSOLUTE_URI.test(a.dataschema as string)) {
    return 'dataschema must be an absolute URI';
  }
  return undefined;
}

const str = (a: Attributes, k: string): Record<string, string> =>
  typeof a[k] === 'string' ? { [k]: a[k] } : {};

/**
 * Parses exactly one CloudEvent (binary or structured mode) and validates it.
 *
 * @param headers request headers (any case); Node's own header object is the cheaper: a web
 *   `Headers` built from a Node request copies every header first
 * @param bodyText the raw body; pass the text, not parsed JSON, so structured mode is detected
 * @param maxBytes refuse larger bodies with 413
 * @returns the event, or the status (400 malformed, 413 too large, 415 batch or non-JSON) and why
 */
export function parseCloudEvent(
  headers: EventHeaders,
  bodyText: string,
  maxBytes: number = DEFAULT_MAX_EVENT_BYTES,
): EventParse {
  if (bodyText.length > maxBytes || Buffer.byteLength(bodyText) > maxBytes) {
    return reject(413, `event body exceeds ${maxBytes} bytes`);
  }
  const h = normalize(headers);
  const contentType = (h['content-type'] ?? '').toLowerCase();
  if (contentType.startsWith('application/cloudevents-batch')) {
    return reject(415, 'batched CloudEvents are not accepted; send one event per request');
  }
  const structured = contentType.startsWith('application/cloudevents');
  if (structured && !contentType.startsWith('application/cloudevents+json')) {
    return reject(
      415,
      `structured events must be application/cloudevents+json, got ${contentType}`,
    );
  }
  if (structured && bodyText.trimStart().startsWith('[')) {
    return reject(415, 'batched CloudEvents are not accepted; send one event per request');
  }
  const attrs = structured ? fromBody(bodyText) : fromHeaders(h);
  if (typeof attrs === 'string') return reject(400, attrs);
  const why = invalid(attrs);
  if (why !== undefined) return reject(400, why);
  if (attrs.data_base64 !== undefined) {
    return reject(415, 'binary event data (data_base64) is not supported');
  }
  const datacontenttype = attrs.datacontenttype as string | undefined;
  const data = jsonData(structured ? attrs.data : bodyText, datacontenttype);
  if (!data.ok) return data;
  const extensions: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(attrs)) {
    if (!CORE.has(k)) extensions[k] = v as string | number | boolean;
  }
  return {
    ok: true,
    event: {
      specversion: '1.0',
      id: attrs.id as string,
      source: attrs.source as string,
      type: attrs.type as string,
      ...str(attrs, 'subject'),
      ...str(attrs, 'time'),
      ...str(attrs, 'datacontenttype'),
      ...str(attrs, 'dataschema'),
      data: data.data,
      extensions,
    },
  };
}
