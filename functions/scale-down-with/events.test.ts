/**
 * The CloudEvent form of scaledownwith: only a sender whose Knative OIDC token the API server
 * vouches for, with the right to create `virtualmachinepools/scaledownwith`, changes anything.
 */
import nock from 'nock';
import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../shared/api/index.js';
import { SCALE_DOWN_WITH_EVENT, keys } from '../../shared/api/index.js';
import { requestKey } from '../../shared/domain/index.js';
import {
  API,
  BASE,
  binaryEvent,
  guardNock,
  reviewOfRights,
  statusBody,
  testKube,
} from '../../test/functions/fixtures.js';
import type { ReviewOfRights } from '../../test/functions/fixtures.js';
import { testLog } from '../../test/logs.js';
import { pool, vm } from '../../test/unit/builders.js';
import { buildScaleDownApp } from './app.js';
import { buildScaleDownEventsApp } from './events.js';

const AUD = 'apps/deployment/vmpool-system/scale-down-with';
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.sender.sig';
const SA = 'system:serviceaccount:ci:autoscaler';
const TOKEN_REVIEW = '/apis/authentication.k8s.io/v1/tokenreviews';
const poolPath = (ns: string, name: string): string =>
  `${BASE}/namespaces/${ns}/virtualmachinepools/${name}`;
const vmPath = (ns: string, name: string): string =>
  `${BASE}/namespaces/${ns}/virtualmachines/${name}`;

const unmatched = guardNock();

function build(lines?: string[]) {
  return buildScaleDownEventsApp({
    kube: testKube(),
    log: testLog('test', 'silent', lines),
    audience: AUD,
  });
}

interface Review {
  spec: { token: string; audiences: string[] };
}

/** The API server's TokenReview: the sender's token is valid for the audience, or not. */
function tokenReview(
  status: object = {
    authenticated: true,
    audiences: [AUD],
    user: {
      username: SA,
      uid: 'sa-uid',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:ci', 'system:authenticated'],
    },
  },
  seen: Review[] = [],
): nock.Scope {
  return nock(API)
    .post(TOKEN_REVIEW, (b: Review) => {
      seen.push(b);
      return true;
    })
    .query(true)
    .reply(201, (_uri, b) => ({ ...(b as object), status }));
}

/** An authenticated sender with the right. */
const sender = (): nock.Scope[] => [tokenReview(), reviewOfRights(true)];

const explicitPool = (): VirtualMachinePool => pool({ scaleDownPolicy: 'Explicit', replicas: 3 });

describe('scale-down-with events: who may send', () => {
  const data = { namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] };
  const withAuth = (authorization?: string): RequestInit =>
    binaryEvent(SCALE_DOWN_WITH_EVENT, data, authorization === undefined ? {} : { authorization });

  it('no token → 401, nothing asked of the API server', async () => {
    const res = await build().request('/', withAuth());
    expect(res.status).toBe(401);
    expect(unmatched.seen).toEqual([]);
  });

  it('a token the API server does not vouch for → 401, no review of rights, nothing read', async () => {
    const scope = tokenReview({ authenticated: false, error: 'token has expired' });
    const res = await build().request('/', withAuth(`Bearer ${TOKEN}`));
    expect(res.status).toBe(401);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a token of another audience → 401', async () => {
    const scope = tokenReview({ authenticated: true, audiences: [], user: { username: SA } });
    const res = await build().request('/', withAuth(`Bearer ${TOKEN}`));
    expect(res.status).toBe(401);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a sender without the right → 403, nothing read or written; the reviews asked the right questions', async () => {
    const reviews: Review[] = [];
    const sars: ReviewOfRights[] = [];
    const scopes = [tokenReview(undefined, reviews), reviewOfRights(false, sars)];
    const res = await build().request('/', withAuth(`Bearer ${TOKEN}`));
    expect(res.status).toBe(403);
    for (const s of scopes) s.done();
    expect(unmatched.seen).toEqual([]);
    expect(reviews[0]?.spec).toEqual({ token: TOKEN, audiences: [AUD] });
    expect(sars[0]?.spec).toMatchObject({
      user: SA,
      uid: 'sa-uid',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:ci', 'system:authenticated'],
      resourceAttributes: {
        namespace: 'ci',
        group: 'subresources.virtualization.deckhouse.io',
        resource: 'virtualmachinepools',
        subresource: 'scaledownwith',
        name: 'runners',
        verb: 'create',
      },
    });
  });

  it('the TokenReview cannot be made → 503 (redelivered)', async () => {
    const scope = nock(API)
      .post(TOKEN_REVIEW)
      .query(true)
      .times(3)
      .reply(500, statusBody(500, 'InternalError'));
    const res = await build().request('/', withAuth(`Bearer ${TOKEN}`));
    expect(res.status).toBe(503);
    scope.done();
  });

  it.each([
    ['..', 'runners'],
    ['ci', 'a/b'],
  ])('namespace %s, pool %s → 400 before any API call', async (namespace, p) => {
    const res = await build().request(
      '/',
      binaryEvent(
        SCALE_DOWN_WITH_EVENT,
        { namespace, pool: p, targets: ['x'] },
        { authorization: `Bearer ${TOKEN}` },
      ),
    );
    expect(res.status).toBe(400);
    expect(unmatched.seen).toEqual([]);
  });

  it('audit: the sender (user, groups), the event source and id, the pool and the outcome', async () => {
    const lines: string[] = [];
    const scopes = [tokenReview(), reviewOfRights(false)];
    const init = withAuth(`Bearer ${TOKEN}`);
    await build(lines).request('/', init);
    for (const s of scopes) s.done();
    const audit = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'scaledownwith event refused');
    expect(audit).toMatchObject({
      pool: 'ci/runners',
      user: SA,
      groups: ['system:serviceaccounts', 'system:serviceaccounts:ci', 'system:authenticated'],
      source: 'https://10.96.0.1:443',
      eventId: new Headers(init.headers).get('ce-id'),
      code: 403,
    });
    // The token itself is never logged.
    expect(lines.join('\n')).not.toContain(TOKEN);
  });

  it('the aggregated API port does not take the CloudEvent', async () => {
    const app = buildScaleDownApp({ kube: testKube(), log: testLog('test') });
    const res = await app.request('/', withAuth(`Bearer ${TOKEN}`));
    expect(res.status).toBe(404);
    expect(unmatched.seen).toEqual([]);
  });
});

describe('scale-down-with: the CloudEvent path', () => {
  const event = (data: unknown): RequestInit =>
    binaryEvent(SCALE_DOWN_WITH_EVENT, data, { authorization: `Bearer ${TOKEN}` });

  /** The calls of a request that removes `runners-aaaaa` from `p`; `written()` is the pool PUT. */
  function removesOne(p: VirtualMachinePool) {
    let written: VirtualMachinePool | undefined;
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(200, vm(p, 'runners-aaaaa'))
      .put(poolPath('ci', 'runners'), (body: VirtualMachinePool) => {
        written = body;
        return true;
      })
      .query(true)
      .reply(200, (_uri, body) => body as object);
    return { scope, written: () => written };
  }

  /** The reads of a request naming `runners-aaaaa` once the replica is gone. */
  const targetGone = (p: VirtualMachinePool | undefined) =>
    nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .reply(404, statusBody(404, 'NotFound'));

  it('success → 202 with an empty body', async () => {
    const { scope, written } = removesOne(explicitPool());
    const who = sender();
    const res = await build().request(
      '/',
      event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    expect(written()?.spec.replicas).toBe(2);
    scope.done();
    for (const s of who) s.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a redelivery (same source and id) after the target is gone → 202, no second PUT', async () => {
    const first = removesOne(explicitPool());
    const who = [...sender(), ...sender(), ...sender()];
    const init = event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] });
    const app = build();
    expect((await app.request('/', init)).status).toBe(202);
    first.scope.done();
    const written = first.written();
    const key = requestKey('https://10.96.0.1:443', new Headers(init.headers).get('ce-id')!);
    expect(written?.metadata.annotations?.[keys.scaleDownRequests]).toBe(key);
    // The reconcile removed the replica since; the pool remembers the request, so the answer comes
    // from the pool alone.
    const second = nock(API).get(poolPath('ci', 'runners')).reply(200, written);
    const res = await app.request('/', init);
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
    second.done();
    expect(unmatched.seen).toEqual([]);
    // A new event naming the vanished replica is still refused.
    const third = targetGone(written);
    const again = event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] });
    expect((await app.request('/', again)).status).toBe(400);
    third.done();
    for (const s of who) s.done();
  });

  it('a refused request (non-member) → 400, no PUT', async () => {
    const p = explicitPool();
    const who = sender();
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .reply(200, p)
      .get(vmPath('ci', 'other-zzzzz'))
      .reply(200, vm(pool({ name: 'other', uid: 'pool-uid-2' }), 'other-zzzzz'));
    const res = await build().request(
      '/',
      event({ namespace: 'ci', pool: 'runners', targets: ['other-zzzzz'] }),
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe(
      'target VirtualMachine "other-zzzzz" does not belong to VirtualMachinePool "runners"',
    );
    scope.done();
    for (const s of who) s.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a pool that is already gone → 204, not a dead letter', async () => {
    const who = sender();
    const scope = nock(API).get(poolPath('ci', 'ghost')).reply(404, statusBody(404, 'NotFound'));
    const res = await build().request(
      '/',
      event({ namespace: 'ci', pool: 'ghost', targets: ['ghost-aaaaa'] }),
    );
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    scope.done();
    for (const s of who) s.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('an empty target list → 400 with nothing read', async () => {
    const who = sender();
    const res = await build().request(
      '/',
      event({ namespace: 'ci', pool: 'runners', targets: [] }),
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe(
      'scaleDownWith requires a non-empty targets list',
    );
    for (const s of who) s.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('conflicts on every attempt → 503 with Retry-After', async () => {
    const p = explicitPool();
    const who = sender();
    const scope = nock(API)
      .get(poolPath('ci', 'runners'))
      .times(5)
      .reply(200, p)
      .get(vmPath('ci', 'runners-aaaaa'))
      .times(5)
      .reply(200, vm(p, 'runners-aaaaa'))
      .put(poolPath('ci', 'runners'))
      .query(true)
      .times(5)
      .reply(409, statusBody(409, 'Conflict'));
    const res = await build().request(
      '/',
      event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] }),
    );
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).not.toBeNull();
    scope.done();
    for (const s of who) s.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('another event type → 400', async () => {
    const res = await build().request('/', binaryEvent('dev.knative.sources.ping'));
    expect(res.status).toBe(400);
    expect(unmatched.seen).toEqual([]);
  });

  it('data without a pool → 400', async () => {
    const res = await build().request('/', event({ namespace: 'ci', targets: ['a'] }));
    expect(res.status).toBe(400);
    expect(unmatched.seen).toEqual([]);
  });
});
