import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../api/index.js';
import { nested, pool, withField } from '../../../test/unit/builders.js';
import { decidePoolWrite } from './admission.js';
import { MAX_TEMPLATE_DEPTH, nestsDeeperThan, tooDeepMessage, validatePool } from './validation.js';

describe('admission bounds template depth', () => {
  // The template is level 1, its spec level 2: a field of `n` nested objects reaches 2 + n.
  const atDepth = (depth: number) => withField(nested(depth - 2));

  it(`accepts ${String(MAX_TEMPLATE_DEPTH)} levels and refuses one more, naming the limit`, () => {
    expect(
      nestsDeeperThan(atDepth(MAX_TEMPLATE_DEPTH).spec.virtualMachineTemplate, MAX_TEMPLATE_DEPTH),
    ).toBe(false);
    expect(validatePool(atDepth(MAX_TEMPLATE_DEPTH))).toEqual([]);
    expect(validatePool(atDepth(MAX_TEMPLATE_DEPTH + 1))).toEqual([
      {
        field: 'spec.virtualMachineTemplate',
        message: tooDeepMessage('spec.virtualMachineTemplate'),
      },
    ]);
    expect(tooDeepMessage('spec.virtualMachineTemplate')).toContain(
      `spec.virtualMachineTemplate nests deeper than ${String(MAX_TEMPLATE_DEPTH)} levels`,
    );
  });

  it('refuses a 2,000-level template, and a deep disk template, before anything walks them', () => {
    const d = decidePoolWrite(atDepth(2_000), undefined);
    expect(d).toEqual({ allowed: false, message: tooDeepMessage('spec.virtualMachineTemplate') });
    const p = pool();
    const [first, ...rest] = p.spec.virtualDiskTemplates;
    const deepDisk: VirtualMachinePool = {
      ...p,
      spec: {
        ...p.spec,
        virtualDiskTemplates: [
          { ...first!, spec: { ...first!.spec, dataSource: { type: 'HTTP', http: nested(100) } } },
          ...rest,
        ],
      },
    };
    expect(validatePool(deepDisk).map((v) => v.field)).toEqual(['spec.virtualDiskTemplates[0]']);
  });
});
