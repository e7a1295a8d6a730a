/**
 * Regression (chaos suite, L6): the CloudEvents SDK fills in a missing specversion and id, so an event
 * without them used to be accepted (a PingSource tick without ce-specversion ran a GC pass).
 */
import { describe, expect, it } from 'vitest';
import { parseCloudEvent } from './cloudevent.js';

const binary: Record<string, string> = {
  'content-type': 'application/json',
  'ce-specversion': '1.0',
  'ce-id': 'a',
  'ce-source': 'https://127.0.0.1',
  'ce-type': 'dev.knative.sources.ping',
};

describe('parseCloudEvent: required attributes as sent', () => {
  it.each(['specversion', 'id', 'source', 'type'])('refuses a binary event without ce-%s', (a) => {
    const headers = { ...binary };
    delete headers[`ce-${a}`];
    const r = parseCloudEvent(headers, '{}');
    expect(r).toEqual({
      ok: false,
      status: 400,
      message: `missing required CloudEvent attribute ${a}`,
    });
  });

  it.each(['specversion', 'id', 'source', 'type'])('refuses a structured event without %s', (a) => {
    const event: Record<string, string> = {
      specversion: '1.0',
      id: 'a',
      source: '/s',
      type: 'dev.knative.sources.ping',
    };
    delete event[a];
    const r = parseCloudEvent(
      { 'content-type': 'application/cloudevents+json' },
      JSON.stringify(event),
    );
    expect(r.ok).toBe(false);
    expect(r.ok ? 0 : r.status).toBe(400);
  });

  it('still accepts complete events in both modes', () => {
    expect(parseCloudEvent(binary, '{}').ok).toBe(true);
    const structured = JSON.stringify({
      specversion: '1.0',
      id: 'a',
      source: '/s',
      type: 'dev.knative.sources.ping',
    });
    expect(parseCloudEvent({ 'content-type': 'application/cloudevents+json' }, structured).ok).toBe(
      true,
    );
  });
});
