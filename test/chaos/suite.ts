/**
 * The chaos suite, sized by the caller: the full run (`npm run test:chaos`) and a short one inside
 * `npm test` (test/e2e/chaos.test.ts) share every check.
 * @module
 */
import { describe, expect, it } from 'vitest';
import { runCrashInjection } from './crash.js';
import { runDeliveryChaos } from './delivery.js';
import { startFaultProxy } from './faults.js';
import { runHostileInput } from './hostile.js';
import { runProcessRestarts } from './restarts.js';
import { runProtectionRace } from './protect.js';
import { runRunaway } from './runaway.js';
import { runClaimsChaos } from './claims.js';
import { effectiveGrants, extraGrants, renderBase, tlsVersions } from './security.js';
import { CHAOS_SEED, adminKubeConfig, secondsSince, table } from './kit.js';

/** How much of everything to run. */
export interface ChaosSizes {
  readonly trials: number;
  /** Every crash point (1) or every n-th. */
  readonly crashStride: number;
  readonly faultTrials: number;
  readonly fuzzRuns: number;
  /** Runaway-intent trials (the desire taken back while a large scale-up executes). */
  readonly runawayTrials: number;
  /** Trials of protection racing deletions (scale-down, rollout, healing, expiry in turn). */
  readonly raceTrials: number;
  /** Trials of claims racing releases, expiries, scale changes and delivery storms. */
  readonly claimTrials: number;
}

export function chaosSuite(sizes: ChaosSizes): void {
  describe(`chaos (seed ${CHAOS_SEED})`, () => {
    it(`1. delivery chaos: ${sizes.trials} trials`, async () => {
      const t0 = performance.now();
      const f = await runDeliveryChaos({
        trials: sizes.trials,
        seed: CHAOS_SEED,
        label: 'chaos',
        platform: true,
      });
      console.log(
        table('delivery chaos', [
          ['trials', f.trials],
          ['deliveries', f.deliveries],
          ['dropped events', f.dropped],
          ['duplicated events', f.duplicated],
          ['max concurrent per pool', f.maxConcurrent],
          ['resync ticks', f.resyncTicks],
          ['pools beside the platform simulator', f.simulatedPools],
          ['VMs seen Terminating there', f.terminatingSeen],
          [
            'time waiting for the platform',
            `${(f.platformWaitMs / 1000).toFixed(1)} s, ${f.platformRounds} extra rounds`,
          ],
          ['replies', JSON.stringify(f.replies)],
          ['mutations', JSON.stringify(f.mutations)],
          ['fleet control', JSON.stringify(f.fleet)],
          ['watch events observed', f.watchEvents],
          ['additions judged against the desire at their revision', f.desireChecks],
          ['violations', f.violations.length],
          ['time', secondsSince(t0)],
        ]),
      );
      expect(f.violations).toEqual([]);
      expect(f.trials).toBe(sizes.trials);
    });

    it(`1b. runaway intent: ${sizes.runawayTrials} trials taking the desire back mid scale-up (L1)`, async () => {
      const t0 = performance.now();
      const f = await runRunaway({ trials: sizes.runawayTrials, seed: CHAOS_SEED });
      console.log(
        table(`runaway intent (create burst ${f.burst}, scale-ups to ${f.peak})`, [
          ...f.trials.map((r): [string, string] => [
            `${r.pool} ${r.mode}`,
            `${r.atDrop} members at the drop, desire ${r.after} after: ${r.createsAfter} creates after the drop (at most ${r.allowed})${r.converged ? ', converged' : ', NOT converged'}`,
          ]),
          ['deliveries', f.deliveries],
          ['additions judged against the desire at their revision', f.checked],
          ['  of which above it inside the burst after a drop', f.graced],
          ['violations', f.violations.length],
          ...f.violations.slice(0, 20).map((v, i): [string, string] => [`violation ${i + 1}`, v]),
          ['time', secondsSince(t0)],
        ]),
      );
      expect(f.violations).toEqual([]);
      expect(f.trials.length).toBe(sizes.runawayTrials);
    });

    it(`1c. protection racing deletions: ${sizes.raceTrials} trials (L7)`, async () => {
      const t0 = performance.now();
      const f = await runProtectionRace({ trials: sizes.raceTrials, seed: CHAOS_SEED });
      console.log(
        table('protection racing scale-downs, rollouts, healing and expiry', [
          ...f.trials.map((r): [string, string] => [
            `${r.pool} ${r.kind}`,
            `${r.protections} members protected, ${r.deleted} deleted meanwhile (${r.stale} deletes refused 409), ${r.lost} protected ones deleted${r.converged === undefined ? '' : r.converged ? ', converged' : ', NOT converged'}`,
          ]),
          ['deliveries', f.deliveries],
          ['protected members deleted (violations)', f.trials.reduce((n, r) => n + r.lost, 0)],
          ['violations', f.violations.length],
          ...f.violations.slice(0, 20).map((v, i): [string, string] => [`violation ${i + 1}`, v]),
          ['time', secondsSince(t0)],
        ]),
      );
      expect(f.violations).toEqual([]);
      expect(f.trials.length).toBe(sizes.raceTrials);
    });

    it(`1d. claims under delivery chaos: ${sizes.claimTrials} trials (L1 with claims)`, async () => {
      const t0 = performance.now();
      const f = await runClaimsChaos({ trials: sizes.claimTrials, seed: CHAOS_SEED });
      console.log(
        table('claims: claimers, releasers, ttl expiry, scale changes and delivery storms', [
          ...f.trials.map((r): [string, string] => [
            r.pool,
            `${r.claims} claims, ${r.bound} bound, ${r.released} released, ${r.expired} expired${r.converged ? ', converged' : ', NOT converged'}`,
          ]),
          ['deliveries', f.deliveries],
          ['violations', f.violations.length],
          ...f.violations.slice(0, 20).map((v, i): [string, string] => [`violation ${i + 1}`, v]),
          ['time', secondsSince(t0)],
        ]),
      );
      expect(f.violations).toEqual([]);
      expect(f.trials.length).toBe(sizes.claimTrials);
      expect(f.trials.reduce((n, r) => n + r.bound, 0)).toBeGreaterThan(0);
    });

    it('2. crash injection after every API call of every path (L4)', async () => {
      const t0 = performance.now();
      const paths = await runCrashInjection(CHAOS_SEED, sizes.crashStride);
      console.log(
        table('crash injection', [
          ...paths.map((p): [string, string] => [
            p.path,
            `${p.crashPoints} crash points over ${p.calls} API calls, ${p.violations.length} violations`,
          ]),
          ['time', secondsSince(t0)],
        ]),
      );
      expect(paths.flatMap((p) => p.violations)).toEqual([]);
    });

    it(`3. API faults at 10% of requests: ${sizes.faultTrials} trials`, async () => {
      const t0 = performance.now();
      const proxy = await startFaultProxy(CHAOS_SEED, 0.1);
      const lines: string[] = [];
      try {
        const f = await runDeliveryChaos({
          trials: sizes.faultTrials,
          pools: 3,
          seed: CHAOS_SEED + 1,
          label: 'faults',
          kubeFor: () => proxy.kube(),
          logLines: lines,
        });
        const injected = proxy.injected();
        const total = Object.values(injected).reduce((a, b) => a + b, 0);
        console.log(
          table('API faults', [
            ['trials', f.trials],
            ['deliveries', f.deliveries],
            ['requests through the proxy', proxy.requests()],
            ['faults injected', `${total} (${((100 * total) / proxy.requests()).toFixed(1)}%)`],
            ...Object.entries(injected).map(([k, v]): [string, number] => [`  ${k}`, v]),
            ['replies', JSON.stringify(f.replies)],
            ['log lines scanned for secrets', lines.length],
            ['violations', f.violations.length],
            ['time', secondsSince(t0)],
          ]),
        );
        expect(f.violations).toEqual([]);
        expect(f.trials).toBe(sizes.faultTrials);
        expect(Object.values(injected).every((n) => n > 0)).toBe(true);
        // 5. No secret or token is ever logged, whatever failed.
        const user = adminKubeConfig().getCurrentUser();
        const secrets = [
          proxy.token,
          'PRIVATE KEY',
          (user?.keyData ?? 'unset').slice(0, 40),
          (user?.certData ?? 'unset').slice(0, 40),
        ];
        const leaks = lines.filter((l) => secrets.some((s) => l.includes(s)));
        expect(leaks).toEqual([]);
      } finally {
        await proxy.close();
      }
    });

    it(`4. hostile input: ${sizes.fuzzRuns} runs per property (L6)`, async () => {
      const t0 = performance.now();
      const f = await runHostileInput(sizes.fuzzRuns, CHAOS_SEED);
      console.log(
        table('hostile input', [
          ...Object.entries(f.inputs).map(([k, v]): [string, number] => [k, v]),
          ['replies', JSON.stringify(f.replies)],
          ['violations', f.violations.length],
          ['time', secondsSince(t0)],
        ]),
      );
      expect(f.violations).toEqual([]);
    });

    it('5. security review: least-privilege RBAC per ServiceAccount, TLS floor', async () => {
      const granted = effectiveGrants(await renderBase());
      const tls = await tlsVersions();
      console.log(
        table('security review', [
          ...[...granted].map(([sa, set]): [string, string] => [sa, [...set].sort().join(' ')]),
          ['TLS versions accepted', JSON.stringify(tls)],
        ]),
      );
      expect([...granted.keys()].sort()).toEqual([
        'disk-gc-tick',
        'reconcile-pool',
        'scale-down-with',
        'scale-validate',
        'vmpool-source-adapter',
      ]);
      expect(extraGrants(granted)).toEqual([]);
      expect(tls).toEqual({ 'TLSv1.0': false, 'TLSv1.1': false, 'TLSv1.2': true, 'TLSv1.3': true });
    });

    it('6. process restarts: kube-apiserver, then etcd, killed mid scale-up 0→50 and mid scaledownwith (L1-L5)', async () => {
      const t0 = performance.now();
      const runs = await runProcessRestarts(50, 5);
      const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
      for (const r of runs)
        console.log(
          table(`process restarts: ${r.component}`, [
            ['restarts survived', r.restarts],
            ['down (kill to ready)', r.downMs.map(s).join(', ')],
            ['members when killed in the scale-up', `${String(r.membersAtKill)} of 50`],
            [
              'converged after the restart (scale-up, scaledownwith)',
              r.convergeMs.map(s).join(', '),
            ],
            ['resync ticks meanwhile (every 5 s)', r.ticksAfter.join(', ')],
            ['reconcile answers 5xx (redelivered)', r.retried],
            ['adapter deliveries after the restart', r.adapterEventsAfter],
            [
              'watch resumed: a deleted VM replaced, no tick',
              r.adapterSilent === undefined
                ? s(r.watchProbeMs)
                : `adapter silent 150 s; the resync tick replaced it in ${s(r.healedByTickMs ?? NaN)}`,
            ],
            ['scaledownwith calls until 201', r.scaledownwithCalls],
            ['observer watches resumed', r.observerResumes],
            ['violations', r.violations.length],
            ...r.violations.map((v, i): [string, string] => [`violation ${String(i + 1)}`, v]),
          ]),
        );
      for (const r of runs)
        if (r.adapterSilent !== undefined)
          console.log(`[chaos] the adapter's log (${r.component} restart):\n${r.adapterSilent}`);
      console.log(table('process restarts', [['time', secondsSince(t0)]]));
      expect(runs.flatMap((r) => r.violations.map((v) => `${r.component}: ${v}`))).toEqual([]);
      expect(runs.map((r) => r.restarts)).toEqual([2, 2]);
      // Two planes, each waiting out the adapter's watch back-off in the worst case (restarts.ts).
    }, 600_000);
  });
}
