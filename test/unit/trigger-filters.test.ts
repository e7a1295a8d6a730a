import { describe, expect, it } from 'vitest';
import { sourceConfig } from '../../local/controlplane/adapter.js';
import {
  filterResult,
  shippedTriggerFilters,
  WATCH_TRIGGER,
} from '../../local/controlplane/trigger.js';
import type { SubscriptionsFilter } from '../../local/controlplane/trigger.js';

const attrs =
  (a: Record<string, string>) =>
  (name: string): string | undefined =>
    a[name];

const watch = shippedTriggerFilters(WATCH_TRIGGER);
const verdict = (type: string, kind?: string) =>
  filterResult(watch, attrs(kind === undefined ? { type } : { type, kind }));

describe("the reconcile-pool-watch Trigger's filters (knative/base/eventing.yaml)", () => {
  it("drop a disk's add event, in Resource and Reference mode", () => {
    expect(verdict('dev.knative.apiserver.resource.add', 'VirtualDisk')).toBe('fail');
    expect(verdict('dev.knative.apiserver.ref.add', 'VirtualDisk')).toBe('fail');
  });

  it("pass a disk's update and delete, and every event of pools, VMs and claims", () => {
    for (const verb of ['update', 'delete'])
      for (const mode of ['resource', 'ref'])
        expect(verdict(`dev.knative.apiserver.${mode}.${verb}`, 'VirtualDisk')).toBe('pass');
    for (const kind of ['VirtualMachinePool', 'VirtualMachine', 'VirtualMachineClaim'])
      for (const verb of ['add', 'update', 'delete'])
        expect(verdict(`dev.knative.apiserver.resource.${verb}`, kind)).toBe('pass');
  });

  it('drop ticks and kinds not watched, and an event without a kind', () => {
    expect(verdict('dev.knative.sources.ping')).toBe('fail');
    expect(verdict('dev.knative.apiserver.resource.add', 'Pod')).toBe('fail');
    expect(verdict('dev.knative.apiserver.resource.update')).toBe('fail');
  });
});

describe("filterResult follows Knative's subscriptionsapi filters", () => {
  const f = (filters: SubscriptionsFilter[], a: Record<string, string>) =>
    filterResult(filters, attrs(a));

  it('exact, prefix and suffix: every key must match; a missing attribute fails', () => {
    expect(f([{ exact: { type: 'a', kind: 'b' } }], { type: 'a', kind: 'b' })).toBe('pass');
    expect(f([{ exact: { type: 'a', kind: 'b' } }], { type: 'a' })).toBe('fail');
    expect(f([{ prefix: { type: 'dev.' } }], { type: 'dev.x' })).toBe('pass');
    expect(f([{ prefix: { type: 'dev.' } }], { type: 'de' })).toBe('fail');
    expect(f([{ suffix: { type: '.add' } }], { type: 'x.add' })).toBe('pass');
    expect(f([{ suffix: { type: '.add' } }], { type: 'x.update' })).toBe('fail');
  });

  it('not inverts pass and fail, and says nothing of an expression that says nothing', () => {
    expect(f([{ not: { exact: { type: 'a' } } }], { type: 'a' })).toBe('fail');
    expect(f([{ not: { exact: { type: 'a' } } }], { type: 'b' })).toBe('pass');
    expect(f([{ not: {} }], { type: 'a' })).toBe('none');
  });

  it('all fails on any failure; any passes on any pass; empty filters say nothing', () => {
    expect(f([{ all: [{ exact: { type: 'a' } }, { exact: { kind: 'k' } }] }], { type: 'a' })).toBe(
      'fail',
    );
    expect(f([{ any: [{ exact: { type: 'b' } }, { exact: { type: 'a' } }] }], { type: 'a' })).toBe(
      'pass',
    );
    expect(f([{ any: [{ exact: { type: 'b' } }] }], { type: 'a' })).toBe('fail');
    expect(f([], { type: 'a' })).toBe('none');
  });

  it('refuses CESQL rather than guess at it', () => {
    expect(() => f([{ cesql: "type = 'a'" }], { type: 'a' })).toThrow(/CESQL/);
  });
});

describe('the adapter config with filters', () => {
  it('carries them as the ApiServerSource field `filters`, and leaves the field out when none', () => {
    const base = { kubeconfigPath: '', sink: '', resources: [] };
    const config = JSON.parse(sourceConfig({ ...base, filters: watch })) as { filters?: unknown };
    expect(config.filters).toEqual(watch);
    expect(JSON.parse(sourceConfig({ ...base, filters: [] }))).not.toHaveProperty('filters');
    expect(JSON.parse(sourceConfig(base))).not.toHaveProperty('filters');
  });
});
