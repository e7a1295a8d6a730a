/**
 * Installing without races (local/install.ts against nock): what is decided from a read is written
 * conditioned on it. A create is a POST, so an object somebody else created after the read is
 * refused, never merged into and labelled vmpool's; an update carries the resourceVersion read; a
 * take-over is put back on exit.
 */
import nock from 'nock';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StoredObject } from '../../shared/api/index.js';
import { createManifests } from '../../shared/kube/index.js';
import { kubeConfigFor } from '../../shared/kube/config.js';
import {
  createdMeanwhileMessage,
  installIfMissing,
  installOwned,
  restoreTakenOver,
} from '../../local/install.js';
import { foreignMessage } from '../../local/ownership.js';
import { statusBody } from '../functions/fixtures.js';

const API = 'https://k8s.test';
const COLLECTION = '/apis/apiregistration.k8s.io/v1/apiservices';
const NAME = 'v1alpha2.subresources.virtualization.deckhouse.io';
const PATH = `${COLLECTION}/${NAME}`;
const TODO = 'Choose another group.';
const OURS = { 'app.kubernetes.io/part-of': 'vmpool', 'app.kubernetes.io/managed-by': 'vmpool' };

/** vmpool's APIService manifest. */
const manifest = {
  apiVersion: 'apiregistration.k8s.io/v1',
  kind: 'APIService',
  metadata: { name: NAME },
  spec: { service: { namespace: 'vmpool-local', name: 'scale-down-with' }, group: 'x' },
};

/** The APIService as stored, with `labels` and resourceVersion `rv`. */
function stored(labels: Record<string, string>, rv: string, backend = 'virtualization-api') {
  return {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: {
      name: NAME,
      uid: 'uid-1',
      resourceVersion: rv,
      labels,
      managedFields: [{ manager: 'deckhouse', operation: 'Apply' }],
    },
    spec: { service: { namespace: 'd8-virtualization', name: backend } },
  };
}
const FOREIGN = { heritage: 'deckhouse' };
const notFound = { kind: 'Status', reason: 'NotFound', code: 404, message: 'not found' };
const exists = { kind: 'Status', reason: 'AlreadyExists', code: 409, message: 'already exists' };
const conflict = {
  kind: 'Status',
  reason: 'Conflict',
  code: 409,
  message: 'the object has been modified',
};

/** An apply patch body: nock hands application/apply-patch+yaml over as text (JSON here). */
const parsed = (body: unknown): unknown =>
  typeof body === 'string' ? (JSON.parse(body) as unknown) : body;

const ctx = (takeOver = false) => ({
  manifests: createManifests(kubeConfigFor()),
  takeOver,
});

beforeAll(() => {
  nock.disableNetConnect();
});
afterEach(() => {
  nock.cleanAll();
});

describe('installOwned: a foreign create between the read and the write', () => {
  it.each([false, true])(
    'is refused and said so, never merged into (take-over %s)',
    async (takeOver) => {
      const racer = stored(FOREIGN, '5');
      let merged = false;
      const scope = nock(API)
        .get(PATH)
        .reply(404, notFound)
        .post(COLLECTION)
        .query({ fieldManager: 'vmpool' })
        .reply(409, exists)
        .get(PATH)
        .reply(200, racer);
      // What the API server would do with an apply: merge into the racer's object.
      nock(API)
        .patch(PATH)
        .query(true)
        .reply(200, () => {
          merged = true;
          return racer;
        });
      const out = await installOwned(ctx(takeOver), manifest, TODO);
      expect(out).toEqual({
        ok: false,
        message: createdMeanwhileMessage(
          { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', name: NAME },
          racer as StoredObject,
          TODO,
        ),
      });
      expect(out.ok ? '' : out.message).toContain(
        'was created by somebody else while vmpool was installing it (labels heritage=deckhouse; written by deckhouse (Apply)); vmpool left it unchanged. Choose another group.',
      );
      expect(merged).toBe(false);
      scope.done();
    },
  );

  it('creates by POST with vmpool’s labels and field manager when nothing is there', async () => {
    let sent: unknown;
    const scope = nock(API)
      .get(PATH)
      .reply(404, notFound)
      .post(COLLECTION)
      .query({ fieldManager: 'vmpool' })
      .reply(201, (_uri, body) => {
        sent = body;
        return stored(OURS, '1');
      });
    const out = await installOwned(ctx(), manifest, TODO);
    expect(out).toMatchObject({ ok: true, action: 'created' });
    expect(sent).toMatchObject({ metadata: { name: NAME, labels: OURS } });
    scope.done();
  });
});

describe('installOwned: updates carry the resourceVersion read', () => {
  it('applies with the version read; a change since is read and decided again', async () => {
    const bodies: unknown[] = [];
    const scope = nock(API)
      .get(PATH)
      .reply(200, stored(OURS, '7'))
      .patch(PATH)
      .query({ fieldManager: 'vmpool', force: 'true' })
      .reply(409, (_uri, body) => {
        bodies.push(parsed(body));
        return conflict;
      })
      .get(PATH)
      .reply(200, stored(OURS, '8'))
      .patch(PATH)
      .query({ fieldManager: 'vmpool', force: 'true' })
      .reply(200, (_uri, body) => {
        bodies.push(parsed(body));
        return stored(OURS, '9');
      });
    const out = await installOwned(ctx(), manifest, TODO);
    expect(out).toMatchObject({ ok: true, action: 'updated' });
    expect(out.ok ? out.previous : 'failed').toBeUndefined();
    expect(bodies).toMatchObject([
      { metadata: { resourceVersion: '7', labels: OURS } },
      { metadata: { resourceVersion: '8', labels: OURS } },
    ]);
    scope.done();
  });

  it('an object that became somebody else’s since the read is refused on the re-read', async () => {
    const now = stored(FOREIGN, '8');
    const scope = nock(API)
      .get(PATH)
      .reply(200, stored(OURS, '7'))
      .patch(PATH)
      .query(true)
      .reply(409, conflict)
      .get(PATH)
      .reply(200, now);
    const out = await installOwned(ctx(), manifest, TODO);
    expect(out).toEqual({
      ok: false,
      message: foreignMessage(
        { apiVersion: 'apiregistration.k8s.io/v1', kind: 'APIService', name: NAME },
        now as StoredObject,
        TODO,
      ),
    });
    scope.done();
  });
});

describe('take-over and restore', () => {
  it('a take-over returns what was there, and restoreTakenOver puts it back on that version', async () => {
    const before = stored(FOREIGN, '7');
    const scope = nock(API)
      .get(PATH)
      .reply(200, before)
      .patch(PATH)
      .query({ fieldManager: 'vmpool', force: 'true' })
      .reply(200, stored(OURS, '8', 'scale-down-with'));
    const out = await installOwned(ctx(true), manifest, TODO);
    expect(out).toMatchObject({ ok: true, action: 'tookOver', previous: before });
    scope.done();

    let put: unknown;
    const back = nock(API)
      .get(PATH)
      .reply(200, stored(OURS, '12', 'scale-down-with'))
      .put(PATH)
      .query({ fieldManager: 'vmpool' })
      .reply(200, (_uri, body) => {
        put = body;
        return stored(FOREIGN, '13');
      });
    expect(await restoreTakenOver(ctx().manifests, before as StoredObject)).toBeUndefined();
    back.done();
    expect(put).toEqual({
      ...before,
      metadata: { name: NAME, uid: 'uid-1', resourceVersion: '12', labels: FOREIGN },
    });
  });

  it('a restore refused as stale (the aggregator wrote the status) is read and decided again', async () => {
    const before = stored(FOREIGN, '7') as StoredObject;
    const versions: string[] = [];
    const scope = nock(API)
      .get(PATH)
      .reply(200, stored(OURS, '12', 'scale-down-with'))
      .put(PATH)
      .query({ fieldManager: 'vmpool' })
      .reply(409, (_uri, body) => {
        versions.push((body as StoredObject).metadata.resourceVersion ?? '');
        return statusBody(409, 'Conflict', 'the object has been modified');
      })
      .get(PATH)
      .reply(200, stored(OURS, '13', 'scale-down-with'))
      .put(PATH)
      .query({ fieldManager: 'vmpool' })
      .reply(200, (_uri, body) => {
        versions.push((body as StoredObject).metadata.resourceVersion ?? '');
        return stored(FOREIGN, '14');
      });
    expect(await restoreTakenOver(ctx().manifests, before)).toBeUndefined();
    scope.done();
    expect(versions).toEqual(['12', '13']);
  });

  it('an object no longer the one taken over, or no longer vmpool’s, is left as it is', async () => {
    const before = stored(FOREIGN, '7') as StoredObject;
    nock(API)
      .get(PATH)
      .reply(200, stored({ heritage: 'someone' }, '20'));
    expect(await restoreTakenOver(ctx().manifests, before)).toMatch(
      /is no longer the object vmpool took over \(labels heritage=someone.*left in place, not restored$/,
    );
    nock(API)
      .get(PATH)
      .reply(200, {
        ...stored(OURS, '20'),
        metadata: { ...stored(OURS, '20').metadata, uid: 'u2' },
      });
    expect(await restoreTakenOver(ctx().manifests, before)).toMatch(/not restored$/);
    expect(nock.pendingMocks()).toEqual([]);
  });
});

describe('installIfMissing', () => {
  it('one created by somebody else meanwhile is used as it is, not written', async () => {
    const theirs = stored(FOREIGN, '3');
    const scope = nock(API)
      .get(PATH)
      .reply(404, notFound)
      .post(COLLECTION)
      .query({ fieldManager: 'vmpool' })
      .reply(409, exists)
      .get(PATH)
      .reply(200, theirs);
    const out = await installIfMissing(ctx(), manifest);
    expect(out).toEqual({ ok: true, action: 'present', object: theirs });
    scope.done();
  });
});
