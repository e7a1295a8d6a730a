/**
 * Binary-mode CloudEvent requests, as the ApiServerSource adapter and PingSource send them, for the
 * tests, the benchmarks and `npm start`'s ticks.
 * @module
 */
import { randomUUID } from 'node:crypto';
import { PING } from '../shared/api/index.js';

/** A binary-mode CloudEvent request with JSON data. */
export function eventInit(
  type: string,
  data: unknown,
  id: string = randomUUID(),
  source = 'https://127.0.0.1:6443',
): RequestInit {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'ce-specversion': '1.0',
      'ce-id': id,
      'ce-type': type,
      'ce-source': source,
    },
    body: JSON.stringify(data),
  };
}

/** A PingSource tick; `data` may name a namespace (`{namespace}`) or be empty. */
export function pingInit(
  data: unknown = {},
  source = '/apis/v1/namespaces/vmpool/pingsources/tick',
): RequestInit {
  return eventInit(PING, data, randomUUID(), source);
}
