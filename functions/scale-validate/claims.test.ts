import { describe, expect, it } from 'vitest';
import { CLAIM_GROUP, CLAIM_VERSION, claimCelMessages } from '../../shared/api/index.js';
import { guardNock, testKube } from '../../test/functions/fixtures.js';
import { CLAIM_PATH, buildValidateApp } from './app.js';
import { testLog } from '../../test/logs.js';

interface ReviewResponse {
  response: { uid: string; allowed: boolean; status?: { code: number; message: string } };
}

const claim = (spec: Record<string, unknown>) => ({
  apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
  kind: 'VirtualMachineClaim',
  metadata: { name: 'job-1', namespace: 'ci' },
  spec,
});

async function post(
  operation: 'CREATE' | 'UPDATE',
  object: object,
  oldObject?: object,
): Promise<ReviewResponse['response']> {
  const app = buildValidateApp({ kube: testKube(), log: testLog('test') });
  const request = {
    uid: 'uid-claim-1',
    kind: { group: CLAIM_GROUP, version: CLAIM_VERSION, kind: 'VirtualMachineClaim' },
    resource: { group: CLAIM_GROUP, version: CLAIM_VERSION, resource: 'virtualmachineclaims' },
    name: 'job-1',
    namespace: 'ci',
    operation,
    userInfo: { username: 'ci-scheduler' },
    object,
    ...(oldObject === undefined ? {} : { oldObject }),
  };
  const res = await app.request(CLAIM_PATH, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as ReviewResponse).response;
}

const unmatched = guardNock();

describe('scale-validate: claims', () => {
  it('refuses a ttl that is no Go duration with the field and one message, calling no API', async () => {
    const r = await post('CREATE', claim({ poolName: 'runners', ttl: '2 hours' }));
    expect(r).toMatchObject({ uid: 'uid-claim-1', allowed: false });
    expect(r.status).toMatchObject({
      code: 422,
      message: 'spec.ttl: must be a Go duration such as 30m or 2h',
    });
    expect(unmatched.seen).toEqual([]);
  });

  it('refuses moving a claim to another pool, admits a valid claim', async () => {
    const before = claim({ poolName: 'runners' });
    const moved = await post('UPDATE', claim({ poolName: 'desktops' }), before);
    expect(moved.status?.message).toBe(claimCelMessages.poolNameImmutable);
    const ok = await post('CREATE', claim({ poolName: 'runners', holder: 'job 7', ttl: '30m' }));
    expect(ok.allowed).toBe(true);
    expect(unmatched.seen).toEqual([]);
  });
});
