import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/api/index.js';
import {
  adapterConfigOf,
  guessResource,
  selectorString,
  shippedSources,
  sourceConfig,
} from '../../local/controlplane/adapter.js';

describe('the adapter config the Eventing controller renders from an ApiServerSource', () => {
  it('writes label selectors as apimachinery does, sorted by key', () => {
    expect(selectorString({ matchExpressions: [{ key: 'b', operator: 'Exists' }] })).toBe('b');
    expect(
      selectorString({
        matchLabels: { z: '1' },
        matchExpressions: [
          { key: 'a', operator: 'In', values: ['y', 'x'] },
          { key: 'm', operator: 'NotIn', values: ['q'] },
          { key: 'c', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('a in (x,y),!c,m notin (q),z=1');
    expect(selectorString({})).toBe('');
  });

  it('guesses plurals without discovery', () => {
    expect(guessResource('VirtualMachinePool')).toBe('virtualmachinepools');
    expect(guessResource('VirtualDisk')).toBe('virtualdisks');
    expect(guessResource('Ingress')).toBe('ingresses');
    expect(guessResource('NetworkPolicy')).toBe('networkpolicies');
    expect(guessResource('Endpoints')).toBe('endpoints');
  });

  it('watches all namespaces for {}, the own namespace without a selector', () => {
    const resources = [{ apiVersion: 'v1', kind: 'Pod' }];
    expect(adapterConfigOf({ resources, namespaceSelector: {} }, 'src')).toMatchObject({
      allNamespaces: true,
    });
    expect(adapterConfigOf({ resources }, 'src')).toMatchObject({
      namespaces: ['src'],
      allNamespaces: false,
      mode: 'Reference',
    });
    expect(() =>
      adapterConfigOf({ resources, namespaceSelector: { matchLabels: { a: 'b' } } }, 'src'),
    ).toThrow(/namespaces listed/);
  });

  it('knative/ ships one source: all pools, VMs and disks selected by pool-uid, all claims, no owner filter', () => {
    const sources = shippedSources();
    expect(sources.map((s) => `${s.namespace}/${s.name}`)).toEqual(['vmpool-system/vmpool']);
    const config = JSON.parse(
      sourceConfig({
        kubeconfigPath: '',
        sink: '',
        ...adapterConfigOf(sources[0]!.spec, sources[0]!.namespace),
      }),
    ) as Record<string, unknown>;
    expect(config).toEqual({
      namespaces: [],
      allNamespaces: true,
      resources: [
        {
          gvr: {
            Group: 'virtualization.deckhouse.io',
            Version: 'v1alpha2',
            Resource: 'virtualmachinepools',
          },
          selector: '',
        },
        {
          gvr: {
            Group: 'virtualization.deckhouse.io',
            Version: 'v1alpha2',
            Resource: 'virtualmachines',
          },
          selector: keys.poolUid,
        },
        {
          gvr: {
            Group: 'virtualization.deckhouse.io',
            Version: 'v1alpha2',
            Resource: 'virtualdisks',
          },
          selector: keys.poolUid,
        },
        {
          gvr: {
            Group: 'vmpool.virtualization.deckhouse.io',
            Version: 'v1alpha1',
            Resource: 'virtualmachineclaims',
          },
          selector: '',
        },
      ],
      mode: 'Resource',
    });
  });
});
