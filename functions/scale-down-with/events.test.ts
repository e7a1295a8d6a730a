/**
 * The CloudEvent form of scaledownwith: only an event delivered with a token the API server vouches
 * for, and carrying its sender's own token, where both identities may create
 * `virtualmachinepools/scaledownwith` on the pool, changes anything. The sender's right is what
 * counts: the delivery (the Trigger) is the same for every tenant.
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
  statusBody,
  testKube,
} from '../../test/functions/fixtures.js';
import type { ReviewOfRights } from '../../test/functions/fixtures.js';
import { testLog } from '../../test/logs.js';
import { pool, vm } from '../../test/unit/builders.js';
import { buildScaleDownApp } from './app.js';
import {
  DEFAULT_SENDER_AUDIENCE,
  SENDER_TOKEN_EXTENSION,
  buildScaleDownEventsApp,
} from './events.js';

const AUD = 'apps/deployment/vmpool-system/scale-down-with';
const SENDER_AUD = DEFAULT_SENDER_AUDIENCE;
/** The Trigger's OIDC token, as the Broker's filter presents it. */
const DELIVERY = 'eyJhbGciOiJSUzI1NiJ9.trigger.sig';
const TRIGGER = 'system:serviceaccount:vmpool-system:oidc-trigger-vmpool-scaledownwith';
/** The sender's own token, carried in the event. */
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.sender.sig';
const SA = 'system:serviceaccount:ci:autoscaler';
const TOKEN_REVIEW = '/apis/authentication.k8s.io/v1/tokenreviews';
const SAR = '/apis/authorization.k8s.io/v1/subjectaccessreviews';
const poolPath = (ns: string, name: string): string =>
  `${BASE}/namespaces/${ns}/virtualmachinepools/${name}`;
const vmPath = (ns: string, name: string): string =>
  `${BASE}/namespaces/${ns}/virtualmachines/${name}`;
const groupsOf = (user: string): string[] => [
  'system:serviceaccounts',
  `system:serviceaccounts:${user.split(':')[2] ?? ''}`,
  'system:authenticated',
];

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

/** The API server's TokenReview of the delivery's token: valid for the audience, or not. */
function tokenReview(
  status: object = {
    authenticated: true,
    audiences: [AUD],
    user: { username: TRIGGER, uid: 'trigger-uid', groups: groupsOf(TRIGGER) },
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

/** The TokenReview of one known token: `user`'s, issued for `audience` (and for nothing else). */
function identity(token: string, user: string, audience: string, seen: Review[] = []) {
  return nock(API)
    .post(TOKEN_REVIEW, (b: Review) => {
      if (b.spec.token !== token) return false;
      seen.push(b);
      return true;
    })
    .query(true)
    .reply(201, (_uri, b) => {
      const asked = (b as Review).spec.audiences;
      const status = asked.includes(audience)
        ? {
            authenticated: true,
            audiences: [audience],
            user: { username: user, uid: `${user}-uid`, groups: groupsOf(user) },
          }
        : { authenticated: false, error: 'token audiences is invalid for the target audiences' };
      return { ...(b as object), status };
    });
}

/** SubjectAccessReviews answered from RBAC as `grants` says: user → namespaces where it may. */
function rights(
  grants: Record<string, string[]>,
  seen: ReviewOfRights[] = [],
  times = 2,
): nock.Scope {
  return nock(API)
    .post(SAR, (b: ReviewOfRights) => {
      seen.push(b);
      return true;
    })
    .query(true)
    .times(times)
    .reply(201, (_uri, b) => {
      const { user, resourceAttributes } = (b as ReviewOfRights).spec;
      const allowed = (grants[user] ?? []).includes(resourceAttributes.namespace ?? '');
      return { ...(b as object), status: { allowed } };
    });
}

/** The Trigger delivering, and the sender `SA` with the right in `ci`. */
const sender = (): nock.Scope[] => [
  identity(DELIVERY, TRIGGER, AUD),
  identity(TOKEN, SA, SENDER_AUD),
  rights({ [TRIGGER]: ['ci'], [SA]: ['ci'] }),
];

/** The headers of an event delivered by the Trigger and carrying `token` as its sender's (null: none). */
const signed = (token: string | null = TOKEN): Record<string, string> => ({
  authorization: `Bearer ${DELIVERY}`,
  ...(token === null ? {} : { [`ce-${SENDER_TOKEN_EXTENSION}`]: token }),
});

const explicitPool = (): VirtualMachinePool => pool({ scaleDownPolicy: 'Explicit', replicas: 3 });

describe('scale-down-with events: who may send', () => {
  const data = { namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] };
  const withAuth = (headers: Record<string, string> = {}): RequestInit =>
    binaryEvent(SCALE_DOWN_WITH_EVENT, data, headers);

  it('no token → 401, nothing asked of the API server', async () => {
    const res = await build().request('/', withAuth({ [`ce-${SENDER_TOKEN_EXTENSION}`]: TOKEN }));
    expect(res.status).toBe(401);
    expect(unmatched.seen).toEqual([]);
  });

  it('a delivery token the API server does not vouch for → 401, no review of rights, nothing read', async () => {
    const scope = tokenReview({ authenticated: false, error: 'token has expired' });
    const res = await build().request('/', withAuth(signed()));
    expect(res.status).toBe(401);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a delivery token of another audience → 401', async () => {
    const scope = tokenReview({ authenticated: true, audiences: [], user: { username: TRIGGER } });
    const res = await build().request('/', withAuth(signed()));
    expect(res.status).toBe(401);
    scope.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a delivery without its own right in the namespace → 403, the sender is not even asked', async () => {
    const sars: ReviewOfRights[] = [];
    const scopes = [identity(DELIVERY, TRIGGER, AUD), rights({ [SA]: ['ci'] }, sars, 1)];
    const res = await build().request('/', withAuth(signed()));
    expect(res.status).toBe(403);
    for (const s of scopes) s.done();
    expect(sars.map((r) => r.spec.user)).toEqual([TRIGGER]);
    expect(unmatched.seen).toEqual([]);
  });

  it('a delivery without a sender token in the event → 401, nothing read', async () => {
    const scopes = [identity(DELIVERY, TRIGGER, AUD), rights({ [TRIGGER]: ['ci'] }, [], 1)];
    const res = await build().request('/', withAuth(signed(null)));
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toContain(SENDER_TOKEN_EXTENSION);
    for (const s of scopes) s.done();
    expect(unmatched.seen).toEqual([]);
  });

  it("the Trigger's own token passed off as the sender's → 401 (another audience)", async () => {
    const scopes = [identity(DELIVERY, TRIGGER, AUD), rights({ [TRIGGER]: ['ci'] }, [], 1)];
    const again = identity(DELIVERY, TRIGGER, AUD);
    const res = await build().request('/', withAuth(signed(DELIVERY)));
    expect(res.status).toBe(401);
    for (const s of [...scopes, again]) s.done();
    expect(unmatched.seen).toEqual([]);
  });

  it('a sender without the right → 403, nothing read or written; the reviews asked the right questions', async () => {
    const reviews: Review[] = [];
    const sars: ReviewOfRights[] = [];
    const scopes = [
      identity(DELIVERY, TRIGGER, AUD, reviews),
      identity(TOKEN, SA, SENDER_AUD, reviews),
      rights({ [TRIGGER]: ['ci'] }, sars),
    ];
    const res = await build().request('/', withAuth(signed()));
    expect(res.status).toBe(403);
    for (const s of scopes) s.done();
    expect(unmatched.seen).toEqual([]);
    expect(reviews.map((r) => r.spec)).toEqual([
      { token: DELIVERY, audiences: [AUD] },
      { token: TOKEN, audiences: [SENDER_AUD] },
    ]);
    expect(sars.map((r) => r.spec.user)).toEqual([TRIGGER, SA]);
    expect(sars[1]?.spec).toMatchObject({
      user: SA,
      uid: `${SA}-uid`,
      groups: groupsOf(SA),
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

  it("tenant A's event for tenant B's pool → 403, nothing read, though the Trigger may act in both", async () => {
    const A = 'system:serviceaccount:tenant-a:autoscaler';
    const TOKEN_A = 'eyJhbGciOiJSUzI1NiJ9.tenant-a.sig';
    const scopes = [
      identity(DELIVERY, TRIGGER, AUD),
      identity(TOKEN_A, A, SENDER_AUD),
      // The admin opted both tenants' namespaces in for events; A has the right in its own only.
      rights({ [TRIGGER]: ['tenant-a', 'tenant-b'], [A]: ['tenant-a'] }),
    ];
    const lines: string[] = [];
    const res = await build(lines).request(
      '/',
      binaryEvent(
        SCALE_DOWN_WITH_EVENT,
        { namespace: 'tenant-b', pool: 'runners', targets: ['runners-aaaaa'] },
        signed(TOKEN_A),
      ),
    );
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: string }).error).toContain(
      `User "${A}" cannot create resource "virtualmachinepools/scaledownwith"`,
    );
    for (const s of scopes) s.done();
    // No GET of tenant B's pool or VM, no PUT.
    expect(unmatched.seen).toEqual([]);
    const audit = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'scaledownwith event refused');
    expect(audit).toMatchObject({ pool: 'tenant-b/runners', user: A, via: TRIGGER, code: 403 });
  });

  it('the TokenReview cannot be made → 503 (redelivered)', async () => {
    const scope = nock(API)
      .post(TOKEN_REVIEW)
      .query(true)
      .times(3)
      .reply(500, statusBody(500, 'InternalError'));
    const res = await build().request('/', withAuth(signed()));
    expect(res.status).toBe(503);
    scope.done();
  });

  it.each([
    ['..', 'runners'],
    ['ci', 'a/b'],
  ])('namespace %s, pool %s → 400 before any API call', async (namespace, p) => {
    const res = await build().request(
      '/',
      binaryEvent(SCALE_DOWN_WITH_EVENT, { namespace, pool: p, targets: ['x'] }, signed()),
    );
    expect(res.status).toBe(400);
    expect(unmatched.seen).toEqual([]);
  });

  it('audit: the sender (user, groups), the delivery, the event source and id, the pool and the outcome', async () => {
    const lines: string[] = [];
    const scopes = [
      identity(DELIVERY, TRIGGER, AUD),
      identity(TOKEN, SA, SENDER_AUD),
      rights({ [TRIGGER]: ['ci'] }),
    ];
    const init = withAuth(signed());
    await build(lines).request('/', init);
    for (const s of scopes) s.done();
    const audit = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'scaledownwith event refused');
    expect(audit).toMatchObject({
      pool: 'ci/runners',
      user: SA,
      via: TRIGGER,
      groups: groupsOf(SA),
      source: 'https://10.96.0.1:443',
      eventId: new Headers(init.headers).get('ce-id'),
      code: 403,
    });
    // Neither token is ever logged.
    expect(lines.join('\n')).not.toContain(TOKEN);
    expect(lines.join('\n')).not.toContain(DELIVERY);
  });

  it('the aggregated API port does not take the CloudEvent', async () => {
    const app = buildScaleDownApp({ kube: testKube(), log: testLog('test') });
    const res = await app.request('/', withAuth(signed()));
    expect(res.status).toBe(404);
    expect(unmatched.seen).toEqual([]);
  });

  it('refuses to start with one audience for the delivery and the sender', () => {
    expect(() =>
      buildScaleDownEventsApp({
        kube: testKube(),
        log: testLog('test'),
        audience: AUD,
        senderAudience: AUD,
      }),
    ).toThrow(/must differ/);
  });
});

describe('scale-down-with: the CloudEvent path', () => {
  const event = (data: unknown): RequestInit => binaryEvent(SCALE_DOWN_WITH_EVENT, data, signed());

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
    const key = requestKey(SA, 'https://10.96.0.1:443', new Headers(init.headers).get('ce-id')!);
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

  it("another sender's event with the same source and id is not taken for a redelivery", async () => {
    // Another sender's request, recorded with the pool: its key is that sender's.
    const init = event({ namespace: 'ci', pool: 'runners', targets: ['runners-aaaaa'] });
    const id = new Headers(init.headers).get('ce-id')!;
    const other = 'system:serviceaccount:ci:other-autoscaler';
    const theirs = requestKey(other, 'https://10.96.0.1:443', id);
    const p = explicitPool();
    p.metadata.annotations = { ...p.metadata.annotations, [keys.scaleDownRequests]: theirs };
    const { scope, written } = removesOne(p);
    const who = sender();
    const res = await build().request('/', init);
    expect(res.status).toBe(202);
    scope.done();
    for (const s of who) s.done();
    // Carried out (not answered from the record), and recorded under this sender's own key.
    expect(written()?.spec.replicas).toBe(2);
    const mine = requestKey(SA, 'https://10.96.0.1:443', id);
    expect(mine).not.toBe(theirs);
    expect(written()?.metadata.annotations?.[keys.scaleDownRequests]).toBe(`${theirs} ${mine}`);
    expect(unmatched.seen).toEqual([]);
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
