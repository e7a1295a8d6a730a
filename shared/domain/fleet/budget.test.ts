/**
 * The disruption budget (maxUnavailable) as whole plans spend it.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../api/index.js';
import { keys } from '../../api/index.js';
import {
  NOW,
  SECOND,
  observed,
  pool,
  seededRandom,
  phasedMember as member,
  actionsOf as of,
  later,
} from '../../../test/unit/builders.js';
import type { Plan } from '../plan/index.js';
import { plan } from '../plan/index.js';

describe('rollout budget', () => {
  /** Six Running members of `p` on the revision before `p`'s template. */
  function six(budget: number | string | undefined): {
    p: VirtualMachinePool;
    ms: ReturnType<typeof member>[];
  } {
    const p = pool({ replicas: 6 });
    const ms = Array.from({ length: 6 }, (_, i) => member(p, `runners-m${i}xxx`, 'Running'));
    const next = pool({ replicas: 6 });
    next.spec.virtualMachineTemplate = {
      ...next.spec.virtualMachineTemplate,
      spec: { ...next.spec.virtualMachineTemplate.spec, cpu: { cores: 4 } },
    };
    if (budget !== undefined) next.spec.rollout = { maxUnavailable: budget };
    return { p: next, ms };
  }
  const patched = (pl: Plan) =>
    of(pl, 'updateVm')
      .filter((u) => u.why.includes('rollout'))
      .map((u) => u.vm.metadata.name);

  it('absent: every member at once (today)', () => {
    const { p, ms } = six(undefined);
    expect(patched(plan(observed(p, ms), NOW, seededRandom(1)))).toHaveLength(6);
  });

  it('2 (or 34%): two at a time, the next once those are Running on the new revision', () => {
    for (const budget of [2, '34%']) {
      const { p, ms } = six(budget);
      const first = plan(observed(p, ms), NOW, seededRandom(1));
      expect(patched(first)).toEqual(['runners-m0xxx', 'runners-m1xxx']);
      const byName = new Map(of(first, 'updateVm').map((u) => [u.vm.metadata.name, u.vm]));
      // Restarting: patched, not yet marked updated, and one of them down.
      const restarting = ms.map((m) => {
        const vm = byName.get(m.vm.metadata.name);
        if (vm === undefined) return m;
        const down = vm.metadata.name === 'runners-m0xxx';
        return {
          ...m,
          vm: { ...vm, status: { ...vm.status, phase: down ? 'Starting' : 'Running' } },
        };
      });
      expect(patched(plan(observed(p, restarting), later(SECOND), seededRandom(1)))).toEqual([]);
      // Both Running on the new revision: the next two.
      const hash = first.status.desiredTemplateHash!;
      const done = restarting.map((m) =>
        byName.has(m.vm.metadata.name)
          ? {
              ...m,
              vm: {
                ...m.vm,
                metadata: {
                  ...m.vm.metadata,
                  labels: { ...m.vm.metadata.labels, [keys.templateHash]: hash },
                },
                status: { ...m.vm.status, phase: 'Running' },
              },
            }
          : m,
      );
      expect(patched(plan(observed(p, done), later(2 * SECOND), seededRandom(1)))).toEqual([
        'runners-m2xxx',
        'runners-m3xxx',
      ]);
    }
  });

  it('a member already down is patched without taking the budget', () => {
    const { p, ms } = six(1);
    const down = ms.map((m, i) =>
      i === 5 ? { ...m, vm: { ...m.vm, status: { ...m.vm.status, phase: 'Starting' } } } : m,
    );
    // The down member takes the only slot: no serving member is patched, the down one is.
    expect(patched(plan(observed(p, down), NOW, seededRandom(1)))).toEqual(['runners-m5xxx']);
  });
});
