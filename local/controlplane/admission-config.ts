/**
 * The kube-apiserver's admission configuration of the local plane: it presents a client certificate
 * to every webhook it calls, as a hardened cluster can (`--admission-control-config-file`, a
 * WebhookAdmissionConfiguration's `kubeConfigFile`), so scale-validate's client-certificate check
 * (WEBHOOK_CLIENT_CA_FILE) is exercised locally.
 * @module
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyPair } from './certs.js';

/** The common name of the certificate the local kube-apiserver presents to webhooks. */
export const WEBHOOK_CLIENT_CN = 'kube-apiserver-webhook-client';

/**
 * Writes the admission configuration and the kubeconfig it names into `dir`; returns the path for
 * `--admission-control-config-file`.
 */
export function writeAdmissionConfig(dir: string, client: KeyPair): string {
  const kubeconfig = join(dir, 'webhook-client.kubeconfig');
  // `*` matches every webhook, by URL or by Service: the API server picks the user by the webhook's
  // host and port, then falls back to `*`.
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'users:',
      "- name: '*'",
      '  user:',
      `    client-certificate: ${client.certPath}`,
      `    client-key: ${client.keyPath}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const path = join(dir, 'admission.yaml');
  const webhook = [
    '    apiVersion: apiserver.config.k8s.io/v1',
    '    kind: WebhookAdmissionConfiguration',
    `    kubeConfigFile: ${kubeconfig}`,
  ];
  writeFileSync(
    path,
    [
      'apiVersion: apiserver.config.k8s.io/v1',
      'kind: AdmissionConfiguration',
      'plugins:',
      '- name: ValidatingAdmissionWebhook',
      '  configuration:',
      ...webhook,
      '- name: MutatingAdmissionWebhook',
      '  configuration:',
      ...webhook,
      '',
    ].join('\n'),
  );
  return path;
}
