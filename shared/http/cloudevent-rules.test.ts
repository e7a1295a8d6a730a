import { describe, expect, it } from 'vitest';
import { parseCloudEvent } from './cloudevent.js';

const binary = {
  'content-type': 'application/json',
  'ce-specversion': '1.0',
  'ce-id': 'e1',
  'ce-source': '/apis/v1/namespaces/ns',
  'ce-type': 't',
};
const structured = { 'content-type': 'application/cloudevents+json; charset=utf-8' };
const event = { specversion: '1.0', id: 'e1', source: 's', type: 't' };

/** The CloudEvents 1.0 rules the parser applies itself (it no longer runs the SDK's schema). */
describe('parseCloudEvent: the spec rules', () => {
  it.each([
    ['a time that is not RFC 3339', { ...binary, 'ce-time': 'yesterday' }, /time/],
    ['an attribute name with a dash', { ...binary, 'ce-my-ext': 'x' }, /attribute name/],
    ['an empty subject', { ...binary, 'ce-subject': '' }, /subject/],
    ['a source with a space', { ...binary, 'ce-source': 'a b' }, /source/],
    ['a relative dataschema', { ...binary, 'ce-dataschema': 'schema.json' }, /dataschema/],
    ['bad percent-encoding', { ...binary, 'ce-subject': '%E0%A4%A' }, /percent/],
  ] as const)('refuses %s with 400, naming it', (_what, headers, why) => {
    const r = parseCloudEvent(headers, '{}');
    expect(r.ok ? 'accepted' : [r.status, r.message]).toEqual([400, expect.stringMatching(why)]);
  });

  it('percent-decodes binary-mode header values', () => {
    const r = parseCloudEvent({ ...binary, 'ce-subject': 'caf%C3%A9' }, '{}');
    expect(r.ok && r.event.subject).toBe('café');
  });

  it('keeps time as sent and does not invent one', () => {
    const at = '2026-12-02T01:02:03.5+01:00';
    const sent = parseCloudEvent({ ...binary, 'ce-time': at }, '{}');
    expect(sent.ok && sent.event.time).toBe(at);
    const none = parseCloudEvent(binary, '{}');
    expect(none.ok && 'time' in none.event).toBe(false);
  });

  it('refuses a structured extension that is an object or a fraction', () => {
    for (const ext of [{ a: 1 }, 1.5, null]) {
      const r = parseCloudEvent(structured, JSON.stringify({ ...event, ext }));
      expect(r.ok ? 'accepted' : r.status).toBe(400);
    }
  });

  it('keeps structured extensions typed: string, integer, boolean', () => {
    const r = parseCloudEvent(
      structured,
      JSON.stringify({ ...event, shard: '0/2', seq: 7, retry: false, data: { x: 1 } }),
    );
    expect(r.ok && r.event).toMatchObject({
      extensions: { shard: '0/2', seq: 7, retry: false },
      data: { x: 1 },
    });
  });

  it('refuses a structured body that is not an object', () => {
    const r = parseCloudEvent(structured, '"e1"');
    expect(r.ok ? 'accepted' : r.status).toBe(400);
  });

  it('refuses a non-string core attribute', () => {
    const r = parseCloudEvent(structured, JSON.stringify({ ...event, id: 7 }));
    expect(r.ok ? 'accepted' : [r.status, r.message]).toEqual([400, expect.stringMatching(/id/)]);
  });
});
