/**
 * scale-validate with WEBHOOK_CLIENT_CA_FILE: only a caller whose client certificate that CA signed
 * (the kube-apiserver, configured to present one) gets a review; any other pod is refused before the
 * review is read, so it cannot have vmpool dry-run-create VMs and read the answer.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caFile } from '../../shared/http/index.js';
import type { ClientCertificate } from '../../shared/http/index.js';
import { mintCerts } from '../../test/functions/certs.js';
import type { TestCerts } from '../../test/functions/certs.js';
import { guardNock, testKube } from '../../test/functions/fixtures.js';
import { testLog } from '../../test/logs.js';
import { CLAIM_PATH, POOL_PATH, SCALE_PATH, buildValidateApp } from './app.js';

const unmatched = guardNock();
let certs: TestCerts;
beforeAll(() => {
  certs = mintCerts();
});

const certOf = (pem: string | undefined): ClientCertificate | undefined =>
  pem === undefined ? undefined : { authorized: false, chain: [new X509Certificate(pem)] };

function build(pem: string | undefined, names?: string[]) {
  return buildValidateApp({
    kube: testKube(),
    log: testLog('test'),
    clientCa: () => certs.caPem,
    clientCert: () => certOf(pem),
    ...(names === undefined ? {} : { clientNames: names }),
  });
}

/** A review the handler answers without any API call: it proves the request got that far. */
const malformed = (): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: { uid: 'uid-1', operation: 'CREATE' },
  }),
});

describe('scale-validate: only the API server, when a client CA is configured', () => {
  it.each([POOL_PATH, SCALE_PATH, CLAIM_PATH])(
    '%s without a client certificate → 401, nothing read',
    async (path) => {
      const res = await build(undefined).request(path, malformed());
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: string }).error).toBe(
        'a client certificate is required',
      );
      expect(unmatched.seen).toEqual([]);
    },
  );

  it('a certificate of another CA → 401', async () => {
    const res = await build(certs.roguePem).request(POOL_PATH, malformed());
    expect(res.status).toBe(401);
    expect(unmatched.seen).toEqual([]);
  });

  it("the CA's certificate for serving, not for client authentication → 401", async () => {
    const res = await build(certs.serverUsagePem).request(POOL_PATH, malformed());
    expect(res.status).toBe(401);
  });

  it('a name not among the accepted ones → 401', async () => {
    const res = await build(certs.intruderPem, ['front-proxy-client']).request(
      POOL_PATH,
      malformed(),
    );
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toContain('"intruder"');
  });

  it("the API server's certificate → the review is answered", async () => {
    const res = await build(certs.proxyPem, ['front-proxy-client']).request(POOL_PATH, malformed());
    expect(res.status).toBe(200);
    const r = (await res.json()) as { response: { uid: string; allowed: boolean } };
    expect(r.response).toMatchObject({ uid: 'uid-1', allowed: false });
  });

  it('probes need no certificate', async () => {
    const res = await build(undefined).request('/health/liveness');
    expect(res.status).toBe(200);
  });

  it('an unreadable CA bundle → 503 (refused, never let through)', async () => {
    const app = buildValidateApp({
      kube: testKube(),
      log: testLog('test'),
      clientCa: () => undefined,
      clientCert: () => certOf(certs.proxyPem),
    });
    const res = await app.request(POOL_PATH, malformed());
    expect(res.status).toBe(503);
  });
});

describe('caFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vmpool-ca-'));
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('re-reads after its ttl and keeps the last good bundle when the file goes', () => {
    const path = join(dir, 'ca.crt');
    writeFileSync(path, 'one');
    let t = 0;
    const read = caFile(path, 1000, () => t);
    expect(read()).toBe('one');
    writeFileSync(path, 'two');
    expect(read()).toBe('one');
    t = 1000;
    expect(read()).toBe('two');
    rmSync(path);
    t = 2000;
    expect(read()).toBe('two');
    expect(caFile(join(dir, 'missing'))()).toBeUndefined();
  });
});
