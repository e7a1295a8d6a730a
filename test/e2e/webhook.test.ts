import { createServer, type Server } from 'node:https';
import { TLSSocket } from 'node:tls';
import { WEBHOOK_CLIENT_CN } from '../../local/controlplane/admission-config.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, cluster, dropNamespace, errorText, newNamespace, servingCert } from './harness.js';
import { runnersPool } from '../../local/guide.js';

let ns = '';
let server: Server;
/** The common names of the client certificates the API server presented to the webhook. */
const presented: string[] = [];
const hook = `vmpool-e2e-${String(process.pid)}`;

beforeAll(async () => {
  ns = await newNamespace('webhook');
  const { cert } = servingCert('vmpool-webhook', ns);
  // Denies everything it is asked about, echoing the uid as admission.k8s.io/v1 requires.
  server = createServer(
    { cert: cert.certPem, key: cert.keyPem, requestCert: true, rejectUnauthorized: false },
    (req, resp) => {
      const peer = req.socket instanceof TLSSocket ? req.socket.getPeerCertificate() : undefined;
      // An empty object when the caller sent no certificate.
      const cn = peer === undefined || Object.keys(peer).length === 0 ? [] : [peer.subject.CN];
      presented.push(cn.flat().join(','));
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const review = JSON.parse(body) as { request: { uid: string } };
        resp.writeHead(200, { 'content-type': 'application/json' });
        resp.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: {
              uid: review.request.uid,
              allowed: false,
              status: { code: 403, message: 'denied by the e2e webhook' },
            },
          }),
        );
      });
    },
  );
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
});
afterAll(async () => {
  await cluster()
    .kubectl(['delete', 'validatingwebhookconfiguration', hook, '--ignore-not-found'])
    .catch(() => undefined);
  server.close();
  await dropNamespace(ns);
});

describe('serving certificates for the project endpoints', () => {
  it('kube-apiserver calls a webhook at https://127.0.0.1 that uses a minted cert', async () => {
    const addr = server.address();
    if (addr === null || typeof addr === 'string') throw new Error('no port');
    const { caPem } = servingCert('vmpool-webhook', ns);
    await cluster().applyManifest([
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: hook },
        webhooks: [
          {
            name: 'deny.vmpool.e2e',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Fail',
            clientConfig: {
              url: `https://127.0.0.1:${addr.port}/validate`,
              caBundle: Buffer.from(caPem).toString('base64'),
            },
            // Only this file's namespace: other tests share the plane.
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
            rules: [
              {
                apiGroups: ['virtualization.deckhouse.io'],
                apiVersions: ['v1alpha2'],
                operations: ['CREATE'],
                resources: ['virtualmachinepools'],
              },
            ],
          },
        ],
      },
    ]);
    let text = '';
    // Webhook configurations reach the admission chain asynchronously; retry until it bites.
    for (let i = 0; i < 50 && !text.includes('denied by the e2e webhook'); i++) {
      try {
        await create('virtualmachinepools', ns, runnersPool(ns, `denied-${String(i)}`));
        await new Promise((r) => setTimeout(r, 100));
      } catch (err) {
        text = errorText(err);
      }
    }
    expect(text).toContain('denied by the e2e webhook');
    // The plane's API server presents its webhook client certificate (admission-config.ts), which
    // is what lets scale-validate take reviews from it alone (WEBHOOK_CLIENT_CA_FILE).
    expect(presented.length).toBeGreaterThan(0);
    expect(new Set(presented)).toEqual(new Set([WEBHOOK_CLIENT_CN]));
  });
});
