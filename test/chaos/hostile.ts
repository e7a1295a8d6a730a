/**
 * Hostile input (L6): property-based fuzzing of every function's edge against the real API server —
 * CloudEvents (binary, structured, batch, wrong types, huge bodies), AdmissionReviews (wrong kinds,
 * missing fields), scaledownwith bodies and headers (forged X-Remote-User without the front-proxy
 * certificate). Each gets a 4xx or a proper AdmissionReview answer, nothing crashes and nothing is
 * written.
 * @module
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { inject } from 'vitest';
import { buildGcApp } from '../../functions/disk-gc-tick/app.js';
import { buildReconcileApp } from '../../functions/reconcile-pool/app.js';
import { SCALE_DOWN_WITH_EVENT } from '../../shared/api/index.js';
import { buildScaleDownApp } from '../../functions/scale-down-with/app.js';
import { buildScaleDownEventsApp } from '../../functions/scale-down-with/events.js';
import { POOL_PATH, SCALE_PATH, buildValidateApp } from '../../functions/scale-validate/app.js';
import { PING, SUBRESOURCES_GROUP, VERSION } from '../../shared/api/index.js';
import type { ClientCertificate } from '../../shared/http/index.js';
import { dropNamespace, newNamespace } from '../e2e/harness.js';
import { SENDER_AUDIENCE, adminKube, chaosPool, createPool, senderToken, writesIn } from './kit.js';
import { resync } from './laws.js';
import { testLog } from '../logs.js';

/** Figures of the fuzzing run. */
export interface HostileFigures {
  inputs: Record<string, number>;
  replies: Record<string, number>;
  violations: string[];
}

const MIB = 1024 * 1024;

/** A binary-mode event with some attributes changed (undefined removes one). */
function binary(attrs: Record<string, string | undefined>, body: string, ct = 'application/json') {
  const headers: Record<string, string> = { 'content-type': ct };
  const base: Record<string, string | undefined> = {
    'ce-specversion': '1.0',
    'ce-id': 'fuzz',
    'ce-source': 'https://127.0.0.1',
    'ce-type': PING,
    ...attrs,
  };
  for (const [k, v] of Object.entries(base)) if (v !== undefined) headers[k] = v;
  return { method: 'POST', headers, body };
}

const structured = (body: string, ct = 'application/cloudevents+json') => ({
  method: 'POST',
  headers: { 'content-type': ct },
  body,
});

/** CloudEvents that must be refused with 400, 413 or 415, whatever else they carry. */
const badEvents = fc.oneof(
  // Wrong types: not an ApiServerSource/PingSource type (the reconcile and GC apps accept no other).
  fc
    .string({ minLength: 1, maxLength: 40 })
    .filter((t) => !t.startsWith('dev.knative.') && t.trim() === t && /^[\x21-\x7e]+$/.test(t))
    .map((t) => ({ kind: 'wrong type', init: binary({ 'ce-type': t }, '{}') })),
  // A missing required attribute.
  fc
    .constantFrom('ce-specversion', 'ce-id', 'ce-source', 'ce-type')
    .map((a) => ({ kind: 'missing attribute', init: binary({ [a]: undefined }, '{}') })),
  // Another specversion.
  fc
    .constantFrom('0.3', '2.0', '1', 'x')
    .map((v) => ({ kind: 'specversion', init: binary({ 'ce-specversion': v }, '{}') })),
  // Batches, in both spellings.
  fc.jsonValue().map((v) => ({
    kind: 'batch',
    init: structured(
      JSON.stringify([{ specversion: '1.0', id: 'a', source: 's', type: PING, data: v }]),
      'application/cloudevents-batch+json',
    ),
  })),
  fc.array(fc.jsonValue(), { maxLength: 3 }).map((a) => ({
    kind: 'structured array',
    init: structured(JSON.stringify(a)),
  })),
  // Huge bodies.
  fc.integer({ min: MIB + 1, max: MIB + 4096 }).map((n) => ({
    kind: 'huge body',
    init: binary({}, `"${'x'.repeat(n)}"`),
  })),
  // Broken JSON under a JSON content type.
  fc
    .string({ maxLength: 60 })
    .filter((s) => {
      try {
        JSON.parse(s);
        return false;
      } catch {
        return s.trim() !== '';
      }
    })
    .map((s) => ({ kind: 'invalid JSON', init: binary({}, s) })),
  // Non-JSON data.
  fc.constantFrom('text/plain', 'application/xml', 'application/octet-stream').map((ct) => ({
    kind: 'non-JSON data',
    init: binary({}, 'hello', ct),
  })),
  // Resource-mode events whose data is not an object with a name.
  fc
    .jsonValue()
    .filter(
      (v) =>
        typeof v !== 'object' ||
        v === null ||
        Array.isArray(v) ||
        !('metadata' in v) ||
        !('kind' in v),
    )
    .map((v) => ({
      kind: 'wrong data',
      init: binary({ 'ce-type': 'dev.knative.apiserver.resource.update' }, JSON.stringify(v)),
    })),
  // Structured mode with random attributes.
  fc
    .dictionary(fc.string({ maxLength: 10 }), fc.jsonValue(), { maxKeys: 5 })
    .map((o) => ({ kind: 'structured junk', init: structured(JSON.stringify(o)) })),
);

/** AdmissionReview-ish bodies: anything from random JSON to reviews with wrong kinds and holes. */
const reviews = fc.oneof(
  fc.jsonValue().map((v) => ({ kind: 'random JSON', body: JSON.stringify(v) })),
  fc.string({ maxLength: 50 }).map((s) => ({ kind: 'not JSON', body: s })),
  fc
    .record(
      {
        apiVersion: fc.constantFrom('admission.k8s.io/v1', 'admission.k8s.io/v1beta1', 'v1'),
        kind: fc.constantFrom('AdmissionReview', 'Pod', ''),
        request: fc.record(
          {
            uid: fc.oneof(fc.uuid(), fc.constant(''), fc.integer()),
            kind: fc.record({
              group: fc.constantFrom('virtualization.deckhouse.io', 'autoscaling', ''),
              version: fc.constantFrom('v1alpha2', 'v1'),
              kind: fc.constantFrom('VirtualMachinePool', 'Scale', 'Pod'),
            }),
            resource: fc.record({
              group: fc.constantFrom('virtualization.deckhouse.io', ''),
              version: fc.constantFrom('v1alpha2', 'v1'),
              resource: fc.constantFrom('virtualmachinepools', 'virtualmachines', 'pods'),
            }),
            subResource: fc.constantFrom(undefined, 'scale', 'status', 'bogus'),
            operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT', 'BOGUS'),
            namespace: fc.constantFrom('default', 'nope'),
            name: fc.string({ maxLength: 10 }),
            object: fc.oneof(
              fc.jsonValue(),
              fc.constant({ kind: 'VirtualMachinePool', metadata: {}, spec: {} }),
              fc.constant({ apiVersion: 'autoscaling/v1', kind: 'Scale', spec: {} }),
            ),
            oldObject: fc.oneof(fc.constant(undefined), fc.jsonValue()),
          },
          { requiredKeys: [] },
        ),
      },
      { requiredKeys: ['request'] },
    )
    .map((r) => ({ kind: 'review with holes', body: JSON.stringify(r) })),
);

function pemOf(path: string): ClientCertificate {
  return { authorized: false, chain: [new X509Certificate(readFileSync(path))] };
}

/** Runs `runs` inputs per property; returns the figures. */
export async function runHostileInput(runs: number, seed: number): Promise<HostileFigures> {
  const fig: HostileFigures = { inputs: {}, replies: {}, violations: [] };
  const bump = (m: Record<string, number>, k: string): void => {
    m[k] = (m[k] ?? 0) + 1;
  };
  const kube = adminKube();
  const log = testLog('hostile');
  const ns = await newNamespace('hostile');
  const reconcile = buildReconcileApp({ kube, log });
  const gc = buildGcApp({ kube, log });
  const validate = buildValidateApp({ kube, log });
  const pki = inject('cluster').pkiDir;
  let cert: ClientCertificate | undefined;
  const sdw = buildScaleDownApp({ kube, log, clientCert: () => cert });
  const events = buildScaleDownEventsApp({ kube, log, audience: SENDER_AUDIENCE });
  try {
    await createPool(ns, chaosPool(ns, 'target', 'NewestFirst', 2));
    await resync(reconcile, ns);
    /** Runs one input and checks: expected status, no 5xx, and no write. */
    const attempt = async (
      what: string,
      send: () => Promise<Response>,
      ok: (status: number, body: string) => boolean,
    ): Promise<boolean> => {
      bump(fig.inputs, what);
      const before = writesIn(kube.counts());
      const res = await send();
      const body = await res.text();
      bump(fig.replies, String(res.status));
      const writes = writesIn(kube.counts()) - before;
      const good = ok(res.status, body) && writes === 0;
      if (!good && fig.violations.length < 20)
        fig.violations.push(`L6 ${what}: ${res.status} ${body.slice(0, 160)} (${writes} writes)`);
      return good;
    };
    const params = { numRuns: runs, seed, endOnFailure: true };
    const refused = (s: number): boolean => s === 400 || s === 413 || s === 415;

    await fc
      .assert(
        fc.asyncProperty(
          badEvents,
          fc.constantFrom('reconcile', 'gc', 'scaledownwith'),
          (e, to) => {
            const app = to === 'reconcile' ? reconcile : to === 'gc' ? gc : events;
            return attempt(
              `event: ${e.kind}`,
              () => Promise.resolve(app.request('/', e.init)),
              refused,
            );
          },
        ),
        params,
      )
      .catch((err: unknown) => void fig.violations.push(String(err).slice(0, 400)));

    // Arbitrary headers and bodies: never a 5xx, never a write.
    await fc
      .assert(
        fc.asyncProperty(
          fc.dictionary(
            fc.constantFrom(
              'content-type',
              'ce-specversion',
              'ce-id',
              'ce-source',
              'ce-type',
              'x-a',
            ),
            fc.string({ maxLength: 30 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
          ),
          fc.string({ maxLength: 200 }),
          (headers, body) =>
            attempt(
              'event: arbitrary',
              () => Promise.resolve(reconcile.request('/', { method: 'POST', headers, body })),
              (s) => s < 500 && !(s >= 200 && s < 300 && headers['ce-type'] === undefined),
            ),
        ),
        params,
      )
      .catch((err: unknown) => void fig.violations.push(String(err).slice(0, 400)));

    await fc
      .assert(
        fc.asyncProperty(reviews, fc.constantFrom(POOL_PATH, SCALE_PATH), (r, path) =>
          attempt(
            `admission: ${r.kind}`,
            () =>
              Promise.resolve(
                validate.request(path, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body: r.body,
                }),
              ),
            (s, body) => {
              if (s === 400) return true;
              if (s !== 200) return false;
              // A proper AdmissionReview answer: same uid, a boolean verdict.
              const out = JSON.parse(body) as {
                kind?: string;
                response?: { uid?: unknown; allowed?: unknown };
              };
              const sent = (JSON.parse(r.body) as { request?: { uid?: unknown } }).request?.uid;
              return (
                out.kind === 'AdmissionReview' &&
                typeof out.response?.allowed === 'boolean' &&
                out.response.uid === sent
              );
            },
          ),
        ),
        params,
      )
      .catch((err: unknown) => void fig.violations.push(String(err).slice(0, 400)));

    // scaledownwith: identities (none, forged headers, a foreign certificate, a user without rights,
    // an admin) against random bodies; only a dry run or a refusal may come back, never a write.
    const path = `/apis/${SUBRESOURCES_GROUP}/${VERSION}/namespaces/${ns}/virtualmachinepools/target/scaledownwith`;
    const frontProxy = pemOf(join(pki, 'front-proxy-client.crt'));
    const foreign = pemOf(join(pki, 'admin.crt'));
    const bodies = fc.oneof(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string({ maxLength: 80 }),
      fc
        .record({
          targets: fc.array(fc.string({ maxLength: 12 }), { maxLength: 4 }),
          dryRun: fc.constantFrom(undefined, ['All'], ['Bogus']),
        })
        .map((b) => JSON.stringify(b)),
      fc.constant(JSON.stringify({ targets: [] })),
    );
    await fc
      .assert(
        fc.asyncProperty(
          fc.constantFrom('none', 'forged', 'foreign', 'unprivileged', 'admin'),
          fc.string({ maxLength: 20 }).filter((s) => /^[\x21-\x7e]*$/.test(s)),
          bodies,
          (who, user, body) => {
            cert =
              who === 'none' || who === 'forged'
                ? undefined
                : who === 'foreign'
                  ? foreign
                  : frontProxy;
            const headers: Record<string, string> = { 'content-type': 'application/json' };
            if (who !== 'none')
              headers['X-Remote-User'] = who === 'admin' ? 'admin' : user || 'mallory';
            if (who === 'admin' || who === 'forged') headers['X-Remote-Group'] = 'system:masters';
            return attempt(
              `scaledownwith: ${who}`,
              () => Promise.resolve(sdw.request(path, { method: 'POST', headers, body })),
              (s, text) => {
                if (who === 'none' || who === 'forged' || who === 'foreign') return s === 401;
                if (who === 'unprivileged') return s === 403;
                if (s === 400) return true;
                // Only a dry run may succeed: random names are never members.
                return s === 201 && text.includes('dry run');
              },
            );
          },
        ),
        params,
      )
      .catch((err: unknown) => void fig.violations.push(String(err).slice(0, 400)));

    // The CloudEvent form: never on the aggregated API's port; on its own, never without a sender
    // the API server vouches for (none, a forged token, a real token of another audience).
    const event = (authorization?: string): RequestInit =>
      binary(
        { 'ce-type': SCALE_DOWN_WITH_EVENT, ...(authorization ? { authorization } : {}) },
        JSON.stringify({ namespace: ns, pool: 'target', targets: ['target-bbbbb'] }),
      );
    await attempt(
      'scaledownwith event on the aggregated API port',
      () => Promise.resolve(sdw.request('/', event())),
      (s) => s === 404,
    );
    // A sender with the right, whose token was issued for something else.
    const otherAudience = await senderToken(ns, 'elsewhere', 'https://kubernetes.default.svc');
    for (const [who, authorization] of [
      ['no token', undefined],
      ['forged token', 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.'],
      ['token of another audience', otherAudience],
    ] as const)
      await attempt(
        `scaledownwith event: ${who}`,
        () => Promise.resolve(events.request('/', event(authorization))),
        (s) => s === 401,
      );
  } finally {
    await dropNamespace(ns);
  }
  return fig;
}
