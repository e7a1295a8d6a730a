import { describe, expect, it } from 'vitest';
import { parseCloudEvent } from './cloudevent.js';

const binaryHeaders = {
  'content-type': 'application/json',
  'ce-specversion': '1.0',
  'ce-id': 'e1',
  'ce-source': 'https://10.96.0.1:443',
  'ce-type': 'dev.knative.apiserver.ref.update',
  'ce-subject': '/apis/virtualization.deckhouse.io/v1alpha2/namespaces/ns/virtualmachinepools/p1',
  'ce-kind': 'VirtualMachinePool',
  'ce-namespace': 'ns',
  'ce-name': 'p1',
};
const refData = {
  kind: 'VirtualMachinePool',
  namespace: 'ns',
  name: 'p1',
  apiVersion: 'virtualization.deckhouse.io/v1alpha2',
};

describe('parseCloudEvent', () => {
  it('parses a binary-mode event into a plain object with extensions apart', () => {
    const r = parseCloudEvent(binaryHeaders, JSON.stringify(refData));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.event).toMatchObject({
      specversion: '1.0',
      id: 'e1',
      source: 'https://10.96.0.1:443',
      type: 'dev.knative.apiserver.ref.update',
      subject: binaryHeaders['ce-subject'],
      datacontenttype: 'application/json',
      data: refData,
      extensions: { kind: 'VirtualMachinePool', namespace: 'ns', name: 'p1' },
    });
  });

  it("accepts Node's header object: a repeated header arrives as a list and is joined", () => {
    const r = parseCloudEvent(
      { ...binaryHeaders, 'ce-traceid': ['a', 'b'], 'ce-x': undefined },
      '{}',
    );
    expect(r.ok && r.event.extensions).toMatchObject({ traceid: 'a, b' });
    expect(r.ok && 'x' in r.event.extensions).toBe(false);
  });

  it('accepts a Headers object with mixed-case names', () => {
    const h = new Headers({
      'Content-Type': 'application/json',
      'CE-ID': '1',
      'Ce-Source': 's',
      'ce-type': 't',
      'ce-specversion': '1.0',
    });
    expect(parseCloudEvent(h, '{}').ok).toBe(true);
  });

  it('parses a structured-mode event', () => {
    const body = JSON.stringify({
      specversion: '1.0',
      id: 'p',
      source: '/apis/v1/namespaces/ns/pingsources/tick',
      type: 'dev.knative.sources.ping',
      datacontenttype: 'application/json',
      data: { scope: 'all' },
      myext: 'x',
    });
    const r = parseCloudEvent(
      { 'content-type': 'application/cloudevents+json; charset=utf-8' },
      body,
    );
    expect(r.ok && r.event).toMatchObject({
      type: 'dev.knative.sources.ping',
      data: { scope: 'all' },
      extensions: { myext: 'x' },
    });
  });

  it('parses JSON data the SDK leaves as a string (no space before charset)', () => {
    const r = parseCloudEvent(
      { ...binaryHeaders, 'content-type': 'application/json;charset=utf-8' },
      '{"a":1}',
    );
    expect(r.ok && r.event.data).toEqual({ a: 1 });
  });

  it('an event without data has data undefined', () => {
    const r = parseCloudEvent({ ...binaryHeaders }, '');
    expect(r.ok && r.event.data).toBeUndefined();
  });

  it.each([
    ['batch content type', { 'content-type': 'application/cloudevents-batch+json' }, '[]', 415],
    ['structured array', { 'content-type': 'application/cloudevents+json' }, '[{"id":"1"}]', 415],
    ['structured non-JSON', { 'content-type': 'application/cloudevents+xml' }, '<e/>', 415],
    ['missing source', { ...binaryHeaders, 'ce-source': undefined }, '{}', 400],
    ['not a CloudEvent', { 'content-type': 'application/json' }, '{}', 400],
    ['invalid JSON body', binaryHeaders, '{nope', 400],
    ['non-JSON data', { ...binaryHeaders, 'content-type': 'text/plain' }, 'hello', 415],
    ['old specversion', { ...binaryHeaders, 'ce-specversion': '0.3' }, '{}', 400],
  ] as const)('rejects %s with %i', (_what, headers, body, status) => {
    const r = parseCloudEvent(headers, body);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.status).toBe(status);
    expect(r.message).not.toBe('');
  });

  it('names the missing attribute', () => {
    const r = parseCloudEvent({ ...binaryHeaders, 'ce-source': undefined }, '{}');
    expect(!r.ok && r.message).toMatch(/source/);
  });

  it('rejects data_base64', () => {
    const body = JSON.stringify({
      specversion: '1.0',
      id: '1',
      source: 's',
      type: 't',
      data_base64: 'aGk=',
    });
    const r = parseCloudEvent({ 'content-type': 'application/cloudevents+json' }, body);
    expect(!r.ok && r.status).toBe(415);
  });

  it('rejects an oversized body with 413 before parsing', () => {
    const r = parseCloudEvent(binaryHeaders, JSON.stringify({ pad: 'x'.repeat(2000) }), 1000);
    expect(!r.ok && r.status).toBe(413);
  });
});
