/**
 * One HTTP(S) request with a text answer, for probing the control plane and calling the functions it
 * fronts; never rejects on an HTTP error status.
 * @module
 */
import { request as httpRequest } from 'node:http';
import type { Agent } from 'node:https';
import { request as httpsRequest } from 'node:https';
import type { KeyPair } from './certs.js';

/** An HTTP answer. */
export interface Answer {
  readonly status: number;
  readonly body: string;
}

/** What to send. A `body` is sent as JSON. */
export interface Call {
  readonly url: string;
  readonly method?: string;
  readonly body?: unknown;
  /** A list sends one header line per value (as the aggregator's front proxy sends groups). */
  readonly headers?: Record<string, string | string[]>;
  /** CA of the server (HTTPS). */
  readonly ca?: string;
  /** Client certificate (omit to call without one). */
  readonly client?: Pick<KeyPair, 'certPem' | 'keyPem'>;
  readonly agent?: Agent;
  readonly timeoutMs?: number;
}

/** Sends one request and reads the whole answer. */
export function requestText(call: Call): Promise<Answer> {
  return new Promise((ok, fail) => {
    const payload = call.body === undefined ? undefined : JSON.stringify(call.body);
    const send = call.url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = send(
      call.url,
      {
        method: call.method ?? (payload === undefined ? 'GET' : 'POST'),
        ...(call.ca === undefined ? {} : { ca: call.ca }),
        ...(call.client ? { cert: call.client.certPem, key: call.client.keyPem } : {}),
        ...(call.agent ? { agent: call.agent } : {}),
        headers: {
          accept: 'application/json',
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          ...call.headers,
        },
        timeout: call.timeoutMs ?? 30_000,
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => {
          ok({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('error', fail);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(payload);
  });
}
