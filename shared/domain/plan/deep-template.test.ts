import { describe, expect, it } from 'vitest';
import type { VirtualMachinePool } from '../../api/index.js';
import { NOW, pool, runnersVmTemplate, seededRandom } from '../../../test/unit/builders.js';
import { canonicalJson, templateHash, cloneJson } from '../formats/index.js';
import { plan } from './index.js';
import {
  decidePoolWrite,
  MAX_TEMPLATE_DEPTH,
  nestsDeeperThan,
  tooDeepMessage,
  validatePool,
} from '../admission/index.js';

/** `levels` objects nested in one another, `leaf` at the bottom; `reversed` inserts keys the other way. */
function nested(levels: number, leaf: unknown = 'bottom', reversed = false): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) {
    const key = `k${String(i % 3)}`;
    v = reversed ? { [key]: i, deeper: v } : { deeper: v, [key]: i };
  }
  return v;
}

/** The runners pool with `field` as a pass-through field of its VM template spec. */
function withField(field: unknown): VirtualMachinePool {
  const t = runnersVmTemplate();
  return pool({ replicas: 1, virtualMachineTemplate: { ...t, spec: { ...t.spec, extra: field } } });
}

describe('a template nested thousands of levels deep (a pass-through field has no schema bound)', () => {
  it('hashes without overflowing the stack, by content, whatever the key order', () => {
    for (const levels of [2_000, 20_000]) {
      const a = withField(nested(levels));
      const b = withField(nested(levels, 'bottom', true));
      const c = withField(nested(levels, 'other bottom'));
      expect(templateHash(a.spec.virtualMachineTemplate)).toMatch(/^[0-9a-f]{8}$/);
      expect(templateHash(a.spec.virtualMachineTemplate)).toBe(
        templateHash(b.spec.virtualMachineTemplate),
      );
      expect(templateHash(c.spec.virtualMachineTemplate)).not.toBe(
        templateHash(a.spec.virtualMachineTemplate),
      );
    }
    // Keys sorted, the null at the bottom dropped, nothing else lost.
    expect(canonicalJson(nested(2, null))).toBe('{"deeper":{"k0":0},"k1":1}');
  });

  it('is copied without overflowing the stack, as data', () => {
    const deep = nested(20_000);
    const copy = cloneJson(deep);
    expect(canonicalJson(copy)).toBe(canonicalJson(deep));
    let bottom = copy as { deeper?: unknown };
    while (typeof bottom.deeper === 'object') bottom = bottom.deeper as { deeper?: unknown };
    bottom.deeper = 'changed';
    expect(canonicalJson(copy)).not.toBe(canonicalJson(deep));
    const proto = cloneJson(
      JSON.parse('{"__proto__":{"polluted":true},"a":[1,{"b":2}]}') as object,
    );
    expect(Object.keys(proto)).toEqual(['__proto__', 'a']);
    expect((proto as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Array.isArray((proto as { a: unknown }).a)).toBe(true);
  });

  it('is planned: a member is created from it, carrying the field', () => {
    let p = withField(nested(2_000));
    let created: unknown;
    for (let pass = 0; pass < 3 && created === undefined; pass++) {
      const out = plan({ pool: p, vms: [], disks: [] }, NOW, seededRandom(1));
      created = out.actions.find((a) => a.kind === 'createVm');
      p = { ...p, status: out.status };
    }
    expect(created).toBeDefined();
    const vm = (created as { vm: { spec: { extra?: unknown } } }).vm;
    expect(canonicalJson(vm.spec.extra)).toBe(canonicalJson(nested(2_000)));
  });
});

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
