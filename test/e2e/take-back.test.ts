/**
 * A desire taken back while the pool creates, with nothing but watch events to go on: the real
 * ApiServerSource adapter filtered as the watch Trigger filters (a disk's add is never delivered) is
 * reconcile-pool's only source, with no resync tick. kubectl scales the pool up by a lot, then back
 * (or deletes it) mid-way. Checked on a watch of the namespace: L1 against the desire at each instant,
 * creation stopping within one burst of the drop, convergence, no intent left.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { smallPool } from '../../local/guide.js';
import { Observer } from '../chaos/observer.js';
import { create, dropNamespace, eventually, newNamespace, read } from './harness.js';
import { startStack, type Stack } from './stack.js';
import { userOf, type User } from './user.js';

/** A small burst, so that a burst shows within a scale-up of {@link PEAK}. */
const BURST = 6;
const PEAK = 60;

let ns = '';
let stack: Stack;
let obs: Observer;
let user: User;

beforeAll(async () => {
  ns = await newNamespace('takeback');
  stack = await startStack(ns, { resyncMs: 0, createBurst: BURST });
  obs = await Observer.start(ns);
  obs.desire.burst = BURST;
  user = userOf(ns);
});
afterAll(async () => {
  obs.stop();
  await stack.stop();
  await dropNamespace(ns);
});

/** Waits until the observer has seen at least `n` members of `pool` created since revision `rv`. */
async function createdAtLeast(pool: string, rv: number, n: number): Promise<number> {
  return eventually(`${n} creates in ${pool}`, () => {
    const c = obs.desire.additionsAfter(pool, rv).filter((a) => a.kind === 'create').length;
    return Promise.resolve(c >= n ? c : undefined);
  });
}

/** The pool at exactly `n` members, none Terminating, as a fresh list shows. */
async function settledAt(pool: string, n: number): Promise<void> {
  await eventually(
    `${pool} at ${n} members`,
    async () => {
      await obs.sync();
      const all = obs.members(pool);
      return all.length === n && obs.live(pool).length === n ? true : undefined;
    },
    120_000,
  );
}

/** Creates seen around the first drop of the desire below {@link PEAK} since `upRv`, and what L1 allows. */
function afterDrop(pool: string, upRv: number, after: number) {
  const d = obs.desire.createsAroundDrop(pool, upRv, PEAK, after);
  return {
    seen: d.dropRv !== Number.POSITIVE_INFINITY,
    atDrop: d.before,
    createsAfter: d.after,
    allowed: BURST + Math.max(0, after - d.before),
  };
}

/** Scales `pool` (1 member) to {@link PEAK} and, once `when` creates are seen, runs `back`. */
async function upThenBack(pool: string, when: number, back: () => Promise<unknown>) {
  await create(
    'virtualmachinepools',
    ns,
    smallPool(ns, pool, (p) => (p.spec.replicas = 1)),
  );
  await settledAt(pool, 1);
  await user.kubectl(['scale', `virtualmachinepool/${pool}`, `--replicas=${PEAK}`]);
  // The revision the desire rose at, as the pool watch saw it.
  const upRv = await eventually(`${pool} asked for ${PEAK}`, () =>
    Promise.resolve(obs.desire.historyOf(pool).find((d) => d.replicas === PEAK)?.rv),
  );
  const before = await createdAtLeast(pool, upRv, when);
  await back();
  return { upRv, before };
}

describe('a scale-up taken back, on watch events alone (no resync tick, no disk adds)', () => {
  it(`scaled to ${PEAK}, then back to 2 mid-way: at most one burst more, then 2`, async () => {
    const { upRv, before } = await upThenBack('back', 8, () =>
      user.kubectl(['scale', 'virtualmachinepool/back', '--replicas=2']),
    );
    await settledAt('back', 2);
    const d = afterDrop('back', upRv, 2);
    console.error(
      `[take-back] scale back: ${before} creates seen when taken back, ${d.atDrop} before the drop, ${d.createsAfter} after it (allowed ${d.allowed}); L1 judged ${obs.desire.checked}, graced ${obs.desire.graced}`,
    );
    expect(d.seen).toBe(true);
    expect(d.atDrop).toBeLessThan(PEAK - 1);
    expect(d.createsAfter).toBeLessThanOrEqual(d.allowed);
    expect(obs.violations).toEqual([]);
    const intent = (await read('virtualmachinepools', ns, 'back'))?.status as
      { intent?: { creates?: string[] } } | undefined;
    expect(intent?.intent?.creates ?? []).toEqual([]);
  }, 240_000);

  it(`scaled to ${PEAK}, then the pool deleted mid-way: no create after one burst, nothing left`, async () => {
    const { upRv } = await upThenBack('gone', 8, async () => {
      obs.retire('gone');
      await user.kubectl(['delete', 'virtualmachinepool/gone', '--wait=false']);
    });
    await settledAt('gone', 0);
    // A deleted pool's desire is 0: the drop is the deletion.
    const d = afterDrop('gone', upRv, 0);
    expect(d.seen).toBe(true);
    console.error(`[take-back] deletion: ${d.createsAfter} creates after it (allowed ${BURST})`);
    expect(d.createsAfter).toBeLessThanOrEqual(BURST);
    expect(obs.violations).toEqual([]);
    // Its disks go with it (the garbage collector's cascade): none made after the drop is left over.
    await eventually(
      'the deleted pool’s disks gone',
      async () => {
        await obs.sync();
        return obs.poolDisks('gone').length === 0 ? true : undefined;
      },
      120_000,
    );
  }, 240_000);
});
