import { describe, expect, it } from 'vitest';
import type { StoredObject } from '../shared/api/index.js';
import { isRunRegistration } from './registrations.js';

/** A stored object with labels, managers and spec as the test needs them. */
function stored(o: {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  managers?: string[];
  spec?: object;
}): StoredObject {
  return {
    metadata: {
      name: o.name,
      ...(o.namespace === undefined ? {} : { namespace: o.namespace }),
      labels: o.labels ?? {},
      managedFields: (o.managers ?? []).map((manager) => ({ manager, operation: 'Apply' })),
    },
    ...(o.spec === undefined ? {} : { spec: o.spec }),
  } as StoredObject;
}

const VMPOOL = { 'app.kubernetes.io/part-of': 'vmpool', 'app.kubernetes.io/managed-by': 'vmpool' };

describe("isRunRegistration: only npm start's own registrations", () => {
  it('takes the APIService, webhook configuration and Service npm start writes', () => {
    const service = { service: { namespace: 'vmpool-local', name: 'scale-down-with' } };
    expect(
      isRunRegistration(
        stored({ name: 'v1alpha2.x', labels: VMPOOL, managers: ['vmpool'], spec: service }),
        'APIService',
        'vmpool-local',
      ),
    ).toBe(true);
    expect(
      isRunRegistration(
        stored({ name: 'vmpool-local', labels: VMPOOL, managers: ['vmpool'] }),
        'ValidatingWebhookConfiguration',
        'vmpool-local',
      ),
    ).toBe(true);
    expect(
      isRunRegistration(
        stored({
          name: 'scale-down-with',
          namespace: 'vmpool-local',
          labels: VMPOOL,
          managers: ['vmpool'],
        }),
        'Service',
        'vmpool-local',
      ),
    ).toBe(true);
  });

  it("leaves an installed vmpool's APIService (its own namespace), another writer's, and an unlabelled one", () => {
    const installed = { service: { namespace: 'vmpool-system', name: 'scale-down-with' } };
    const local = { service: { namespace: 'vmpool-local', name: 'scale-down-with' } };
    expect(
      isRunRegistration(
        stored({ name: 'v1alpha2.x', labels: VMPOOL, managers: ['vmpool'], spec: installed }),
        'APIService',
        'vmpool-local',
      ),
    ).toBe(false);
    expect(
      isRunRegistration(
        stored({ name: 'v1alpha2.x', labels: VMPOOL, managers: ['kubectl'], spec: local }),
        'APIService',
        'vmpool-local',
      ),
    ).toBe(false);
    expect(
      isRunRegistration(
        stored({ name: 'v1alpha2.x', managers: ['vmpool'], spec: local }),
        'APIService',
        'vmpool-local',
      ),
    ).toBe(false);
    expect(
      isRunRegistration(
        stored({ name: 'other-webhooks', labels: VMPOOL, managers: ['vmpool'] }),
        'ValidatingWebhookConfiguration',
        'vmpool-local',
      ),
    ).toBe(false);
  });
});
