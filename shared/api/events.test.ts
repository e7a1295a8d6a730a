import { describe, expect, it } from 'vitest';
import { PingEvent, RefEvent, ResourceEvent, SourceEvent, sourceEventModel } from './events.js';

const attrs = { specversion: '1.0', id: '1', source: 's' } as const;
const vm = {
  apiVersion: 'v1',
  kind: 'VirtualMachine',
  metadata: { name: 'a', labels: { x: 'y' } },
};

describe('sourceEventModel', () => {
  it('picks the member the type names', () => {
    expect(sourceEventModel('dev.knative.apiserver.resource.add')).toBe(ResourceEvent);
    expect(sourceEventModel('dev.knative.apiserver.ref.delete')).toBe(RefEvent);
    expect(sourceEventModel('dev.knative.sources.ping')).toBe(PingEvent);
    expect(sourceEventModel('something.else')).toBe(SourceEvent);
    expect(sourceEventModel(7)).toBe(SourceEvent);
  });

  it('accepts and refuses exactly what the union does', () => {
    const events: unknown[] = [
      { ...attrs, type: 'dev.knative.apiserver.resource.update', data: vm },
      { ...attrs, type: 'dev.knative.apiserver.resource.update', data: { name: 'a' } },
      {
        ...attrs,
        type: 'dev.knative.apiserver.ref.add',
        data: { apiVersion: 'v1', kind: 'K', name: 'a' },
      },
      { ...attrs, type: 'dev.knative.apiserver.ref.add', data: vm },
      { ...attrs, type: 'dev.knative.apiserver.resource.patch', data: vm },
      { ...attrs, type: 'dev.knative.sources.ping' },
      { ...attrs, type: 'other' },
    ];
    const verdicts = events.map((e) => {
      const type = (e as { type: string }).type;
      const alone = sourceEventModel(type).safeParse(e);
      const union = SourceEvent.safeParse(e);
      expect(alone.success).toBe(union.success);
      if (alone.success && union.success) expect(alone.data).toEqual(union.data);
      return alone.success;
    });
    expect(verdicts).toEqual([true, false, true, false, false, true, false]);
  });
});
