/**
 * Claims through whole plans: a claimed member is never disturbed.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { HOUR, NOW, at, seededRandom } from '../../../test/unit/builders.js';
import { claim, claimed, name, run, world } from '../../../test/unit/claim-builders.js';
import type { World } from '../../../test/unit/world.js';
import { observedOf } from '../../../test/unit/world.js';
import type { Plan } from './index.js';
import { plan } from './index.js';

describe('a claimed member is never disturbed', () => {
  /** Two members, one claimed by `a`; `edit` changes both members. */
  function bound(
    edit: (v: VirtualMachine) => VirtualMachine = (v) => v,
    n = 2,
  ): { w: World; mine: string; other: string } {
    const { w } = run({ ...world(n), claims: [claim('a')] });
    const mine = [...claimed(w).keys()][0] as string;
    const other = w.vms.map(name).find((x) => x !== mine) as string;
    // `edit` changes the claimed member and one other; the rest stay as they are.
    const vms = w.vms.map((v) => (name(v) === mine || name(v) === other ? edit(v) : v));
    return { w: { ...w, vms }, mine, other };
  }
  const deleted = (p: Plan): string[] =>
    p.actions.flatMap((a) => (a.kind === 'deleteVm' ? [a.name] : []));

  it('by healing: an unhealthy claimed member stays, an unclaimed one is replaced', () => {
    const sick = (v: VirtualMachine): VirtualMachine => ({
      ...v,
      status: {
        ...v.status,
        phase: 'Degraded',
        stats: { phasesTransitions: [{ phase: 'Degraded', timestamp: at(-HOUR) }] },
      },
    });
    // Five members, two of them sick: below the breaker, so healing acts.
    const { w, mine, other } = bound(sick, 5);
    const p0 = { ...w.pool, spec: { ...w.pool.spec, healing: { startupTimeout: '5m' } } };
    const p = plan(observedOf({ ...w, pool: p0 }), NOW, seededRandom(1));
    expect(p.status.intent?.deletes?.map((d) => d.name)).toEqual([other]);
    expect(deleted(p)).not.toContain(mine);
  });

  it('by maxMemberAge: an old claimed member stays, an old unclaimed one is replaced', () => {
    const { w, mine, other } = bound();
    const p0 = { ...w.pool, spec: { ...w.pool.spec, maxMemberAge: '10m' } };
    const p = plan(observedOf({ ...w, pool: p0 }), NOW, seededRandom(1));
    expect(p.status.intent?.deletes?.map((d) => d.name)).toEqual([other]);
    expect(deleted(p)).not.toContain(mine);
  });

  it('by a rollout: the claimed member is not patched until released', () => {
    const old = (v: VirtualMachine): VirtualMachine => ({
      ...v,
      metadata: {
        ...v.metadata,
        labels: { ...v.metadata.labels, [keys.templateHash]: 'old' },
        annotations: { ...v.metadata.annotations, [keys.patchedTemplateHash]: 'old' },
      },
    });
    const { w, mine, other } = bound(old);
    const p = plan(observedOf(w), NOW, seededRandom(1));
    const patched = p.actions.flatMap((a) =>
      a.kind === 'updateVm' && a.why.includes('rollout') ? [name(a.vm)] : [],
    );
    expect(patched).toEqual([other]);
    expect(patched).not.toContain(mine);
  });

  it('by a recorded scale-down victim claimed since: the victim is chosen again', () => {
    const { w, mine } = bound();
    const uid = `uid-${mine}`;
    const p0 = {
      ...w.pool,
      spec: { ...w.pool.spec, replicas: 1 },
      status: { ...w.pool.status, intent: { deletes: [{ name: mine, uid }] } },
    };
    const p = plan(observedOf({ ...w, pool: p0 }), NOW, seededRandom(1));
    expect(deleted(p)).not.toContain(mine);
    expect(deleted(p)).toHaveLength(1);
  });
});
