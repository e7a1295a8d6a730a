import { describe, expect, it } from 'vitest';
import { pool, poolWrite as write } from '../../test/unit/builders.js';
import { fail, fakeKube, ok } from '../../test/unit/fake-kube.js';
import { reviewAdmission } from './admission.js';

describe('reviewAdmission', () => {
  it('refuses growth beyond maxReplicas before any API call', async () => {
    const f = fakeKube();
    const verdict = await reviewAdmission(
      write(pool({ replicas: 11 }), pool()),
      f.kube,
      undefined,
      undefined,
      10,
    );
    expect(verdict).toMatchObject({ allowed: false, code: 422 });
    expect(f.calls).toEqual([]);
  });

  it('admits a new pool once the VM API accepts its template in a dry run, passing warnings on', async () => {
    const f = fakeKube({ dryRunCreateVm: ([, vm]) => ok({ vm, warnings: ['cpu is deprecated'] }) });
    const verdict = await reviewAdmission(write(pool()), f.kube);
    expect(f.of('dryRunCreateVm')).toHaveLength(1);
    expect(verdict.allowed).toBe(true);
    expect(verdict.warnings?.join(' ')).toContain('cpu is deprecated');
  });

  it('refuses a template the VM API refuses in the dry run', async () => {
    const f = fakeKube({
      dryRunCreateVm: () => fail('invalid', 'spec.cpu.cores: must be positive'),
    });
    const verdict = await reviewAdmission(write(pool()), f.kube);
    expect(verdict).toMatchObject({ allowed: false });
    expect(verdict.allowed ? '' : verdict.message).toContain('spec.cpu.cores: must be positive');
  });
});
