import { describe, expect, it } from 'vitest';
import { API_VERSION, CLAIM_API_VERSION } from '../shared/api/index.js';
import { eventHeaders } from './bridge.js';

describe('the watch bridge’s CloudEvents', () => {
  it('name a claim under its own group and version, a pool under the pool’s', () => {
    const claim = {
      apiVersion: CLAIM_API_VERSION,
      kind: 'VirtualMachineClaim',
      metadata: { name: 'job-1', namespace: 'ci' },
    };
    expect(eventHeaders('add', claim, 'https://k8s')).toMatchObject({
      'ce-type': 'dev.knative.apiserver.resource.add',
      'ce-subject':
        '/apis/vmpool.virtualization.deckhouse.io/v1alpha1/namespaces/ci/virtualmachineclaims/job-1',
      'ce-kind': 'VirtualMachineClaim',
      'ce-apiversion': CLAIM_API_VERSION,
      'ce-name': 'job-1',
      'ce-namespace': 'ci',
    });
    const pool = {
      apiVersion: API_VERSION,
      kind: 'VirtualMachinePool',
      metadata: { name: 'p', namespace: 'ci' },
    };
    expect(eventHeaders('update', pool, 'https://k8s')['ce-subject']).toBe(
      '/apis/virtualization.deckhouse.io/v1alpha2/namespaces/ci/virtualmachinepools/p',
    );
  });
});
