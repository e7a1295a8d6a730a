import nock from 'nock';
import { describe, expect, it } from 'vitest';
import { CLAIM_API_VERSION, keys } from '../shared/api/index.js';
import { createManifests } from '../shared/kube/index.js';
import { kubeConfigFor } from '../shared/kube/config.js';
import { API, BASE, guardNock, statusBody, testKube } from '../test/functions/fixtures.js';
import type { Clock } from './claims.js';
import { CLAIM_RESOURCE, claim, release } from './claims.js';
import type { Ctx } from './context.js';
import { CliError } from './context.js';
import { run } from './main.js';

const CLAIMS = `/apis/${CLAIM_API_VERSION}/namespaces/ci/virtualmachineclaims`;

interface Printed {
  ctx: Ctx;
  out: string[];
  err: string[];
}

function ctxOf(output: Ctx['output'] = 'table'): Printed {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: Ctx = {
    kube: testKube(),
    raw: createManifests(kubeConfigFor()),
    namespace: 'ci',
    output,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  };
  return { ctx, out, err };
}

/** A clock whose sleeps pass at once, advancing its time. */
function fakeClock(): Clock & { slept: number } {
  let t = 0;
  const c = {
    slept: 0,
    now: () => t,
    sleep: (ms: number) => {
      t += ms;
      c.slept += ms;
      return Promise.resolve();
    },
  };
  return c;
}

function stored(name: string, status?: object, spec: object = { poolName: 'runners' }) {
  return {
    apiVersion: CLAIM_API_VERSION,
    kind: 'VirtualMachineClaim',
    metadata: { name, namespace: 'ci', uid: `uid-${name}`, resourceVersion: '7' },
    spec,
    ...(status === undefined ? {} : { status }),
  };
}

const pending = (reason: string, message: string) => ({
  phase: 'Pending',
  conditions: [{ type: 'Bound', status: 'False', reason, message }],
});
const bound = (vm: string) => ({
  phase: 'Bound',
  virtualMachineName: vm,
  conditions: [{ type: 'Bound', status: 'True', reason: 'Bound' }],
});

async function failure(p: Promise<void>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CliError);
    return (e as Error).message;
  }
  throw new Error('expected the command to fail');
}

const unmatched = guardNock();

describe('kubectl vmpool claim', () => {
  it('creates a claim named after the pool with the flags as its spec, and says so', async () => {
    let sent: unknown;
    nock(API)
      .post(CLAIMS)
      .query(true)
      .reply(201, (_, body) => {
        sent = body;
        return stored('runners-x7k2p', undefined, (body as { spec: object }).spec);
      });
    const p = ctxOf();
    await claim(
      p.ctx,
      'runners',
      { holder: 'job 123', ttl: '1h', onRelease: 'Recycle', wait: false },
      fakeClock(),
      () => 0,
    );
    expect(sent).toEqual({
      apiVersion: CLAIM_API_VERSION,
      kind: 'VirtualMachineClaim',
      metadata: { name: 'runners-bbbbb', namespace: 'ci' },
      spec: { poolName: 'runners', holder: 'job 123', ttl: '1h', onRelease: 'Recycle' },
    });
    expect(p.out).toEqual([`${CLAIM_RESOURCE}/runners-x7k2p created`]);
    expect(unmatched.seen).toEqual([]);
  });

  it('a create retried after its answer was lost finds the claim it made: one claim, not two', async () => {
    const spec = { poolName: 'runners', holder: 'job 5' };
    nock(API)
      .post(CLAIMS)
      .query(true)
      .reply(503, statusBody(503, 'ServiceUnavailable'))
      .post(CLAIMS)
      .query(true)
      .reply(409, statusBody(409, 'AlreadyExists', 'already exists'));
    nock(API)
      .get(`${CLAIMS}/runners-bbbbb`)
      .reply(200, stored('runners-bbbbb', undefined, spec));
    const p = ctxOf();
    await claim(p.ctx, 'runners', { holder: 'job 5', wait: false }, fakeClock(), () => 0);
    expect(p.out).toEqual([`${CLAIM_RESOURCE}/runners-bbbbb created`]);
    expect(unmatched.seen).toEqual([]);
  });

  it("a name taken by another claim is the API server's AlreadyExists, never adopted", async () => {
    const words =
      'virtualmachineclaims.vmpool.virtualization.deckhouse.io "runners-bbbbb" already exists';
    nock(API)
      .post(CLAIMS)
      .query(true)
      .reply(409, statusBody(409, 'AlreadyExists', words));
    nock(API)
      .get(`${CLAIMS}/runners-bbbbb`)
      .reply(200, stored('runners-bbbbb', undefined, { poolName: 'runners', holder: 'bob' }));
    const message = await failure(
      claim(ctxOf().ctx, 'runners', { holder: 'alice', wait: false }, fakeClock(), () => 0),
    );
    expect(message).toBe(`Error from server (AlreadyExists): ${words}`);
  });

  it('--wait prints the bound member alone once Bound, the progress on stderr', async () => {
    nock(API).post(CLAIMS).query(true).reply(201, stored('runners-x7k2p'));
    nock(API)
      .get(`${CLAIMS}/runners-x7k2p`)
      .reply(200, stored('runners-x7k2p', pending('NoIdleMember', 'the pool grows')))
      .get(`${CLAIMS}/runners-x7k2p`)
      .reply(200, stored('runners-x7k2p', bound('runners-abcde')));
    const p = ctxOf();
    const clock = fakeClock();
    await claim(p.ctx, 'runners', { wait: true }, clock);
    expect(p.out).toEqual(['runners-abcde']);
    expect(p.err).toEqual([
      `${CLAIM_RESOURCE}/runners-x7k2p created, waiting for a member of virtualmachinepool/runners`,
    ]);
    expect(clock.slept).toBe(1000);
    expect(unmatched.seen).toEqual([]);
  });

  it('--wait -o name prints the claim once bound (what a script releases later)', async () => {
    nock(API).post(CLAIMS).query(true).reply(201, stored('runners-x7k2p'));
    nock(API)
      .get(`${CLAIMS}/runners-x7k2p`)
      .reply(200, stored('runners-x7k2p', bound('vm-1')));
    const p = ctxOf('name');
    await claim(p.ctx, 'runners', { wait: true }, fakeClock());
    expect(p.out).toEqual([`${CLAIM_RESOURCE}/runners-x7k2p`]);
  });

  it('--wait --timeout: fails once the time is up, saying why the claim is still Pending', async () => {
    nock(API).post(CLAIMS).query(true).reply(201, stored('runners-x7k2p'));
    nock(API)
      .get(`${CLAIMS}/runners-x7k2p`)
      .times(4)
      .reply(200, stored('runners-x7k2p', pending('PoolAtMaximum', '8 of maxReplicas 8 live')));
    const p = ctxOf();
    const message = await failure(
      claim(p.ctx, 'runners', { wait: true, timeout: '3s' }, fakeClock()),
    );
    expect(message).toBe(
      `error: timed out after 3s waiting for ${CLAIM_RESOURCE}/runners-x7k2p to be Bound: still Pending, PoolAtMaximum: 8 of maxReplicas 8 live. The claim stays and binds once a member is idle; give it up with: kubectl vmpool release runners-x7k2p`,
    );
    expect(p.out).toEqual([]);
    expect(unmatched.seen).toEqual([]);
  });

  it('--wait fails at once when the claim is Lost', async () => {
    nock(API).post(CLAIMS).query(true).reply(201, stored('c1'));
    const lost = {
      phase: 'Lost',
      conditions: [{ type: 'Bound', status: 'False', reason: 'Lost', message: 'deleted by hand' }],
    };
    nock(API).get(`${CLAIMS}/c1`).reply(200, stored('c1', lost));
    const message = await failure(claim(ctxOf().ctx, 'runners', { wait: true }, fakeClock()));
    expect(message).toBe(`error: ${CLAIM_RESOURCE}/c1 is Lost: Lost: deleted by hand`);
  });

  it.each<[string, Parameters<typeof claim>[2], string]>([
    [
      '--on-release Keep',
      { onRelease: 'Keep', wait: false },
      'error: invalid argument "Keep" for "--on-release" flag: must be Delete or Recycle',
    ],
    [
      '--timeout without --wait',
      { timeout: '1m', wait: false },
      'error: --timeout is only valid with --wait',
    ],
    [
      '--timeout forever',
      { timeout: 'forever', wait: true },
      'error: invalid argument "forever" for "--timeout" flag: must be a positive Go duration such as 30s or 5m',
    ],
  ])('%s: refused before any request', async (_, flags, message) => {
    expect(await failure(claim(ctxOf().ctx, 'runners', flags))).toBe(message);
    expect(unmatched.seen).toEqual([]);
  });

  it("relays the webhook's refusal in kubectl's words", async () => {
    const denied =
      'admission webhook "virtualmachineclaims.vmpool.virtualization.deckhouse.io" denied the request: spec.ttl: must be a Go duration such as 30m or 2h';
    nock(API)
      .post(CLAIMS)
      .query(true)
      .reply(403, statusBody(403, 'Forbidden', denied));
    const message = await failure(claim(ctxOf().ctx, 'runners', { ttl: '2 hours', wait: false }));
    expect(message).toBe(`Error from server (Forbidden): ${denied}`);
  });
});

describe('kubectl vmpool release', () => {
  const deleted = (name: string, uid: string) =>
    nock(API)
      .delete(`${CLAIMS}/${name}`, (b: { preconditions?: { uid?: string } }) => {
        return b.preconditions?.uid === uid;
      })
      .reply(200, statusBody(200, 'Success'));

  it("deletes a bound claim by uid and says the member goes back idle, as the member's recorded onRelease says", async () => {
    nock(API)
      .get(`${CLAIMS}/job-7`)
      .reply(200, stored('job-7', bound('runners-abcde'), { poolName: 'runners' }));
    nock(API)
      .get(`${BASE}/namespaces/ci/virtualmachines/runners-abcde`)
      .reply(200, {
        apiVersion: 'virtualization.deckhouse.io/v1alpha2',
        kind: 'VirtualMachine',
        metadata: {
          name: 'runners-abcde',
          namespace: 'ci',
          annotations: { [keys.claimedBy]: 'job-7', [keys.onRelease]: 'Recycle' },
        },
        spec: {},
      });
    const del = deleted('job-7', 'uid-job-7');
    const p = ctxOf();
    await release(p.ctx, ['job-7']);
    expect(del.isDone()).toBe(true);
    expect(p.out).toEqual([
      `${CLAIM_RESOURCE}/job-7 deleted: virtualmachinepool/runners takes virtualmachine/runners-abcde back as an idle member (onRelease Recycle)`,
    ]);
    expect(unmatched.seen).toEqual([]);
  });

  it("falls back to the pool's onRelease, Delete by default", async () => {
    nock(API)
      .get(`${CLAIMS}/job-8`)
      .reply(200, stored('job-8', bound('runners-fghij')));
    nock(API)
      .get(`${BASE}/namespaces/ci/virtualmachines/runners-fghij`)
      .reply(404, statusBody(404, 'NotFound'));
    nock(API)
      .get(`${BASE}/namespaces/ci/virtualmachinepools/runners`)
      .reply(404, statusBody(404, 'NotFound'));
    deleted('job-8', 'uid-job-8');
    const p = ctxOf();
    await release(p.ctx, ['job-8']);
    expect(p.out).toEqual([
      `${CLAIM_RESOURCE}/job-8 deleted: virtualmachinepool/runners deletes virtualmachine/runners-fghij and refills its idle members (onRelease Delete)`,
    ]);
  });

  it('says a Pending claim held nothing', async () => {
    nock(API)
      .get(`${CLAIMS}/job-9`)
      .reply(200, stored('job-9', pending('NoIdleMember', 'growing')));
    deleted('job-9', 'uid-job-9');
    const p = ctxOf();
    await release(p.ctx, ['job-9']);
    expect(p.out).toEqual([
      `${CLAIM_RESOURCE}/job-9 deleted: it held no member yet: virtualmachinepool/runners has nothing to release`,
    ]);
  });

  it('a claim that does not exist: the API server’s NotFound, nothing deleted', async () => {
    const words = 'virtualmachineclaims.vmpool.virtualization.deckhouse.io "nope" not found';
    nock(API)
      .get(`${CLAIMS}/nope`)
      .reply(404, statusBody(404, 'NotFound', words));
    const message = await failure(release(ctxOf().ctx, ['nope']));
    expect(message).toBe(`Error from server (NotFound): ${words}`);
    expect(unmatched.seen).toEqual([]);
  });
});

describe('the command line', () => {
  it('release without a claim name says what it needs', async () => {
    const err: string[] = [];
    const code = await run(
      ['release'],
      () => undefined,
      (l) => err.push(l),
    );
    expect(code).toBe(1);
    expect(err[0]).toMatch(/^error: release needs a claim name\n/);
  });
});
