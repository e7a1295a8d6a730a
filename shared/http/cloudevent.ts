/**
 * Parsing one CloudEvent from an HTTP request, with the checks the SDK leaves out.
 * @module
 */
import { CloudEvent, HTTP } from 'cloudevents';

/** A validated CloudEvent as a plain object; extensions are kept apart from the core attributes. */
export interface ParsedEvent {
  readonly specversion: '1.0';
  readonly id: string;
  readonly source: string;
  readonly type: string;
  readonly subject?: string;
  /** As sent, or "now" when absent: the SDK fills it in, so never rely on it. */
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

function normalize(
  headers: Headers | Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = headers instanceof Headers ? headers.entries() : Object.entries(headers);
  for (const [k, v] of entries) if (v !== undefined) out[k.toLowerCase()] = v;
  return out;
}

function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const details = (err as { errors?: unknown }).errors;
  if (!Array.isArray(details) || details.length === 0) return err.message;
  const msgs = details.map((d: { instancePath?: string; message?: string }) =>
    `${d.instancePath ?? ''} ${d.message ?? ''}`.trim(),
  );
  return `${err.message}: ${msgs.join('; ')}`;
}

/** JSON data as a value: the SDK leaves it a string for media types it does not recognise exactly. */
function jsonData(
  data: unknown,
  contentType: string | undefined,
): { ok: true; data: unknown } | EventRejection {
  if (data === undefined || data === null || data === '') return { ok: true, data: undefined };
  if (contentType !== undefined && !isJsonType(contentType)) {
    return reject(415, `event data must be JSON, got datacontenttype ${contentType}`);
  }
  if (data instanceof Uint8Array || ArrayBuffer.isView(data)) {
    return reject(415, 'binary event data (data_base64) is not supported');
  }
  if (typeof data !== 'string') return { ok: true, data };
  try {
    return { ok: true, data: JSON.parse(data) as unknown };
  } catch {
    return reject(400, 'event data is not valid JSON');
  }
}

const REQUIRED = ['specversion', 'id', 'source', 'type'] as const;

/** The first required attribute absent from the request as sent (binary headers or structured JSON). */
function missingRequired(
  h: Readonly<Record<string, string>>,
  contentType: string,
  bodyText: string,
): string | undefined {
  if (!contentType.startsWith('application/cloudevents')) {
    return REQUIRED.find((a) => (h[`ce-${a}`] ?? '') === '');
  }
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return undefined; // reported as malformed JSON by the parser below
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const o = body as Record<string, unknown>;
  return REQUIRED.find((a) => o[a] === undefined || o[a] === '');
}

/**
 * Parses exactly one CloudEvent (binary or structured mode) and validates it.
 *
 * @param headers request headers (any case)
 * @param bodyText the raw body; pass the text, not parsed JSON, so structured mode is detected
 * @param maxBytes refuse larger bodies with 413
 * @returns the event, or the status (400 malformed, 413 too large, 415 batch or non-JSON) and why
 */
export function parseCloudEvent(
  headers: Headers | Readonly<Record<string, string | undefined>>,
  bodyText: string,
  maxBytes: number = DEFAULT_MAX_EVENT_BYTES,
): EventParse {
  if (Buffer.byteLength(bodyText) > maxBytes) {
    return reject(413, `event body exceeds ${maxBytes} bytes`);
  }
  const h = normalize(headers);
  const contentType = (h['content-type'] ?? '').toLowerCase();
  if (contentType.startsWith('application/cloudevents-batch')) {
    return reject(415, 'batched CloudEvents are not accepted; send one event per request');
  }
  if (contentType.startsWith('application/cloudevents')) {
    if (!contentType.startsWith('application/cloudevents+json')) {
      return reject(
        415,
        `structured events must be application/cloudevents+json, got ${contentType}`,
      );
    }
    if (bodyText.trimStart().startsWith('[')) {
      return reject(415, 'batched CloudEvents are not accepted; send one event per request');
    }
  }
  // The SDK fills in a missing specversion, id and time: a sender that omitted a required attribute
  // would pass unnoticed, so their presence is checked on the raw input first.
  const missing = missingRequired(h, contentType, bodyText);
  if (missing !== undefined) return reject(400, `missing required CloudEvent attribute ${missing}`);
  let parsed: ReturnType<typeof HTTP.toEvent>;
  try {
    parsed = HTTP.toEvent({ headers: h, body: bodyText });
  } catch (err) {
    if (err instanceof SyntaxError) return reject(400, `body is not valid JSON: ${err.message}`);
    return reject(400, errorText(err));
  }
  if (Array.isArray(parsed)) {
    return reject(415, 'batched CloudEvents are not accepted; send one event per request');
  }
  // toEvent is typed as the plain attribute record, but builds CloudEvent instances.
  if (!(parsed instanceof CloudEvent)) return reject(400, 'no cloud event detected');
  const ev = parsed;
  if (ev.specversion !== '1.0') return reject(400, `unsupported specversion ${ev.specversion}`);
  try {
    if (!ev.validate()) return reject(400, 'invalid CloudEvent');
  } catch (err) {
    return reject(400, errorText(err));
  }
  if (ev.data_base64 !== undefined)
    return reject(415, 'binary event data (data_base64) is not supported');
  const data = jsonData(ev.data, ev.datacontenttype);
  if (!data.ok) return data;

  const extensions: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(ev)) {
    if (CORE.has(k)) continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') extensions[k] = v;
  }
  return {
    ok: true,
    event: {
      specversion: '1.0',
      id: ev.id,
      source: ev.source,
      type: ev.type,
      ...(ev.subject === undefined ? {} : { subject: ev.subject }),
      ...(ev.time === undefined ? {} : { time: ev.time }),
      ...(ev.datacontenttype === undefined ? {} : { datacontenttype: ev.datacontenttype }),
      ...(ev.dataschema === undefined ? {} : { dataschema: ev.dataschema }),
      data: data.data,
      extensions,
    },
  };
}
