import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { kubeConfigFor, loadKubeConfig } from './config.js';
import { defaultReportingInstance } from './event.js';

describe('kubeConfigFor', () => {
  it('defaults to https://k8s.test with a bearer token', () => {
    const kc = kubeConfigFor();
    expect(kc.getCurrentCluster()?.server).toBe('https://k8s.test');
    expect(kc.getCurrentUser()?.token).toBe('test-token');
  });

  it('verifies TLS when given a CA', () => {
    const kc = kubeConfigFor({ server: 'https://10.0.0.1', caData: 'PEM', namespace: 'ns' });
    expect(kc.getCurrentCluster()?.skipTLSVerify).toBe(false);
    expect(kc.getContextObject('vmpool')?.namespace).toBe('ns');
  });
});

describe('loadKubeConfig', () => {
  it('honours $KUBECONFIG', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kc-'));
    const file = join(dir, 'config');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://from-env.test' } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    vi.stubEnv('KUBECONFIG', file);
    expect(loadKubeConfig().getCurrentCluster()?.server).toBe('https://from-env.test');
  });
});

describe('defaultReportingInstance', () => {
  it('prefers POD_NAME, then HOSTNAME', () => {
    expect(defaultReportingInstance({ POD_NAME: 'p-1', HOSTNAME: 'h' })).toBe('vmpool-p-1');
    expect(defaultReportingInstance({ HOSTNAME: 'h' })).toBe('vmpool-h');
  });
});
