/**
 * L1 and L9 with claims, by property: two reconcilers of one pool interleaved API call by API call
 * (a seeded scheduler picks which waiting call lands next) on an in-memory API server, while claims
 * are created, deleted and expire, the pool is scaled and new members start. After every call:
 * - no claim is carried by two members, and no Bound claim (not past its expiry) names a member
 *   that carries another claim (one member, one claim; one claim, one member);
 * - a create leaves at most the effective target in force since the pass that recorded it read the
 *   pool (a create recorded before a drop of the target may still land: one burst of grace, as
 *   DESIGN L1 allows; those are counted);
 * - a member deleted while it carries a claim's marks was released: its claim is gone or over.
 */
import { describe, expect, it } from 'vitest';
import type {
  VirtualMachine,
  VirtualMachineClaim,
  VirtualMachinePool,
} from '../../shared/api/index.js';
import type { Kube } from '../../shared/kube/index.js';
import type { Rand } from '../../shared/domain/index.js';
import { claimOf, effectiveTarget, rfc3339 } from '../../shared/domain/index.js';
import { reconcilePool } from '../../shared/reconcile/index.js';
import { HOUR, MINUTE, NOW, at, pool, seededRandom, steady } from './builders.js';
import { claim, withClaims } from './claim-builders.js';
import type { MemoryKube } from './memory-kube.js';
import { memoryKube } from './memory-kube.js';
import { testLog } from '../logs.js';

const TRIALS = 40;
const ROUNDS = 12;

interface Tally {
  calls: number;
  creates: number;
  /** Creates above the target in force since their pass read the pool, within the burst after a drop. */
  graced: number;
  binds: number;
  releases: number;
  violations: string[];
}

const vmsOf = (m: MemoryKube): VirtualMachine[] => [...m.store.vm.values()] as VirtualMachine[];
const claimsOf = (m: MemoryKube): VirtualMachineClaim[] =>
  [...m.store.claim.values()] as VirtualMachineClaim[];
const poolOf = (m: MemoryKube): VirtualMachinePool =>
  [...m.store.pool.values()][0] as VirtualMachinePool;

/** The effective target at this instant, from the stored objects. */
function targetNow(m: MemoryKube): number {
  const p = poolOf(m);
  const live = vmsOf(m).filter((v) => v.metadata.deletionTimestamp === undefined);
  const claimed = live.filter((v) => claimOf(v) !== undefined).length;
  const pending = claimsOf(m).filter(
    (c) =>
      c.metadata.deletionTimestamp === undefined &&
      (c.status?.phase ?? 'Pending') === 'Pending' &&
      !live.some((v) => claimOf(v)?.uid === c.metadata.uid),
  ).length;
  return effectiveTarget(p.spec.replicas ?? 0, p.spec.claims, { claimed, pending });
}

/** L9 at this instant; returns the violations found. */
function bindings(m: MemoryKube, now: Date): string[] {
  const out: string[] = [];
  const carriers = new Map<string, string[]>();
  for (const v of vmsOf(m)) {
    const c = claimOf(v);
    if (c !== undefined)
      carriers.set(c.uid, [...(carriers.get(c.uid) ?? []), v.metadata.name ?? '']);
  }
  for (const [uid, names] of carriers)
    if (names.length > 1) out.push(`claim ${uid} carried by ${names.join(', ')}`);
  for (const c of claimsOf(m)) {
    if (c.status?.phase !== 'Bound') continue;
    if (Date.parse(c.status.expiresAt ?? '') <= now.getTime()) continue;
    const vm = vmsOf(m).find((v) => v.metadata.name === c.status?.virtualMachineName);
    const mark = vm === undefined ? undefined : claimOf(vm);
    if (mark !== undefined && mark.uid !== c.metadata.uid)
      out.push(
        `claim ${c.metadata.name ?? ''} Bound to ${vm?.metadata.name ?? ''}, marked for ${mark.name}`,
      );
  }
  return out;
}

async function trial(seed: number, tally: Tally): Promise<void> {
  const rand = seededRandom(seed);
  const p = withClaims(pool({ replicas: 1 }), { minIdle: 1, maxReplicas: 5 });
  const ms = [0, 1].map((i) => steady(p, `runners-m${i}xxx`, { created: at(-HOUR + i * MINUTE) }));
  const m = memoryKube({ pool: p, vms: ms.map((x) => x.vm), disks: ms.flatMap((x) => x.disks) });
  let clock = NOW.getTime();
  let claims = 0;
  const history: number[] = [targetNow(m)];
  const queue: Array<() => void> = [];
  /** Where in `history` the pass that recorded each create had read the pool. */
  const recorded = new Map<string, number>();

  /** The world moving between two calls: claims come and go, time passes, the pool is scaled. */
  const event = (): void => {
    const r = rand();
    if (r < 0.3) {
      const name = `job-${seed}-${++claims}`;
      const c = claim(name, {
        created: rfc3339(new Date(clock)),
        ...(rand() < 0.5 ? { onRelease: 'Recycle' as const } : {}),
        ...(rand() < 0.4 ? { ttl: '10m' } : {}),
      });
      m.store.claim.set(name, c);
    } else if (r < 0.5) {
      const all = claimsOf(m);
      const gone = all[Math.floor(rand() * all.length)];
      if (gone !== undefined) m.store.claim.delete(gone.metadata.name ?? '');
    } else if (r < 0.65) clock += Math.floor(rand() * 8) * MINUTE;
    else if (r < 0.75)
      m.touch<VirtualMachinePool>('pool', 'runners', (x) => ({
        ...x,
        spec: { ...x.spec, replicas: Math.floor(rand() * 4) },
      }));
    else {
      // The platform starts a new member.
      const fresh = vmsOf(m).find((v) => v.status?.phase !== 'Running');
      if (fresh !== undefined)
        m.touch<VirtualMachine>('vm', fresh.metadata.name ?? '', (v) => ({
          ...v,
          metadata: { ...v.metadata, creationTimestamp: rfc3339(new Date(clock)) },
          status: { ...v.status, phase: 'Running' },
        }));
    }
    history.push(targetNow(m));
  };

  /** One reconciler's view of the API server: every call waits for its turn, then is checked. */
  const gated = (who: number): Kube => {
    let readAt = history.length - 1;
    return new Proxy(m.kube, {
      get(target, prop: keyof Kube): unknown {
        const f: unknown = Reflect.get(target, prop);
        if (typeof f !== 'function') return f;
        return async (...args: unknown[]) => {
          await new Promise<void>((go) => queue.push(go));
          if (prop === 'getPool') readAt = history.length - 1;
          const before = vmsOf(m);
          const call = f as (...a: unknown[]) => Promise<{ ok: boolean }>;
          const out = await call.apply(target, args);
          tally.calls++;
          const now = new Date(clock);
          for (const v of bindings(m, now)) tally.violations.push(`seed ${seed}: ${v}`);
          if (prop === 'updatePoolStatus' && out.ok) {
            const written = args[0] as VirtualMachinePool;
            for (const n of written.status?.intent?.creates ?? [])
              if (!recorded.has(n)) recorded.set(n, readAt);
          }
          if (prop === 'createVm' && out.ok) {
            tally.creates++;
            const name = (args[1] as VirtualMachine).metadata.name ?? '';
            const allowed = Math.max(...history.slice(recorded.get(name) ?? readAt));
            const count = vmsOf(m).length;
            if (count > allowed)
              tally.violations.push(
                `seed ${seed}: reconciler ${who} created member ${count} of ${allowed}`,
              );
            else if (count > Math.max(...history.slice(readAt))) tally.graced++;
          }
          if (prop === 'updateVm' && out.ok) {
            const vm = args[0] as VirtualMachine;
            const was = before.find((v) => v.metadata.name === vm.metadata.name);
            if (was !== undefined && claimOf(was) === undefined && claimOf(vm) !== undefined)
              tally.binds++;
            if (was !== undefined && claimOf(was) !== undefined && claimOf(vm) === undefined)
              tally.releases++;
          }
          if (prop === 'deleteVm' && out.ok) {
            const was = before.find((v) => v.metadata.name === args[1]);
            const mark = was === undefined ? undefined : claimOf(was);
            if (mark !== undefined) {
              tally.releases++;
              const c = claimsOf(m).find((x) => x.metadata.uid === mark.uid);
              const over =
                c === undefined ||
                c.status?.phase === 'Expired' ||
                c.status?.phase === 'Lost' ||
                Date.parse(c.status?.expiresAt ?? '') <= now.getTime();
              if (!over)
                tally.violations.push(
                  `seed ${seed}: claimed member ${mark.name} deleted while claimed`,
                );
            }
          }
          history.push(targetNow(m));
          return out;
        };
      },
    });
  };

  const deps = (who: number, r: Rand) => ({
    kube: gated(who),
    now: () => new Date(clock),
    rand: r,
    log: testLog('claims-property'),
    sleep: () => Promise.resolve(),
    createBurst: 2,
    maxPasses: 4,
  });
  for (let round = 0; round < ROUNDS; round++) {
    let running = 2;
    const runs = [1, 2].map((who) =>
      reconcilePool(deps(who, seededRandom(seed * 100 + round * 2 + who)), 'ci', 'runners').finally(
        () => {
          running--;
        },
      ),
    );
    while (running > 0) {
      await new Promise((r) => setImmediate(r));
      if (queue.length === 0) continue;
      if (rand() < 0.15) event();
      const [go] = queue.splice(Math.floor(rand() * queue.length), 1);
      go?.();
    }
    await Promise.all(runs);
    event();
  }
}

describe('claims under two interleaved reconcilers (property)', () => {
  it(`keeps L1 and L9 over ${TRIALS} trials`, async () => {
    const tally: Tally = { calls: 0, creates: 0, graced: 0, binds: 0, releases: 0, violations: [] };
    for (let seed = 1; seed <= TRIALS; seed++) await trial(seed, tally);
    // The trial counts, so a run that exercised nothing is seen as such.
    console.log(
      `claims property: ${TRIALS} trials, ${tally.calls} API calls, ${tally.creates} creates (${tally.graced} in a burst after a drop), ${tally.binds} bindings, ${tally.releases} releases, ${tally.violations.length} violations`,
    );
    expect(tally.violations).toEqual([]);
    expect(tally.binds).toBeGreaterThan(TRIALS);
    expect(tally.releases).toBeGreaterThan(0);
  }, 120_000);
});
