import { describe, expect, it } from 'vitest';
import type { VirtualMachineTemplate } from '../../api/index.js';
import { nested, runnersVmTemplate, withField } from '../../../test/unit/builders.js';
import { canonicalJson, fnv1a, templateHash } from './hash.js';

describe('fnv1a', () => {
  it.each([
    ['', '811c9dc5'],
    ['a', 'e40c292c'],
    ['foobar', 'bf9cf968'],
  ])('fnv1a(%j) = %s (published FNV-1a 32 test vectors)', (text, want) => {
    expect(fnv1a(text)).toBe(want);
  });

  it('hashes UTF-8 bytes and always prints 8 lowercase hex digits', () => {
    // U+00B5 is the two UTF-8 bytes C2 B5, so it hashes differently from the single byte B5.
    let h = 0x811c9dc5;
    for (const b of [0xc2, 0xb5]) h = Math.imul(h ^ b, 0x01000193) >>> 0;
    expect(fnv1a('µ')).toBe(h.toString(16).padStart(8, '0'));
    for (const s of ['x', 'µs', 'runners', '{}']) expect(fnv1a(s)).toMatch(/^[0-9a-f]{8}$/);
  });
});

describe('canonicalJson', () => {
  it.each<[unknown, string]>([
    [{ b: 1, a: 2 }, '{"a":2,"b":1}'],
    [{ a: { d: 1, c: [3, { z: 1, y: 2 }] } }, '{"a":{"c":[3,{"y":2,"z":1}],"d":1}}'],
    [{ a: null, b: {}, c: [], d: 0, e: '' }, '{"d":0,"e":""}'],
    [{ a: { b: { c: {} } } }, '{}'],
    [[null, 1], '[null,1]'],
    [null, 'null'],
    [undefined, 'null'],
    ['x', '"x"'],
    [false, 'false'],
  ])('canonicalJson(%j) = %s', (value, want) => {
    expect(canonicalJson(value)).toBe(want);
  });
});

describe('templateHash', () => {
  const base = runnersVmTemplate();

  it('is 8 lowercase hex digits and deterministic', () => {
    expect(templateHash(base)).toMatch(/^[0-9a-f]{8}$/);
    expect(templateHash(structuredClone(base))).toBe(templateHash(base));
  });

  it('ignores key order in spec and metadata', () => {
    const a: VirtualMachineTemplate = {
      metadata: { labels: { x: '1', y: '2' } },
      spec: { runPolicy: 'AlwaysOn', cpu: { cores: 2, coreFraction: '50%' } },
    };
    const b: VirtualMachineTemplate = {
      spec: { cpu: { coreFraction: '50%', cores: 2 }, runPolicy: 'AlwaysOn' },
      metadata: { labels: { y: '2', x: '1' } },
    };
    expect(templateHash(a)).toBe(templateHash(b));
  });

  it.each<[string, Record<string, unknown>]>([
    ['runPolicy AlwaysOnUnlessStoppedManually', { runPolicy: 'AlwaysOnUnlessStoppedManually' }],
    ['osType Generic', { osType: 'Generic' }],
    ['bootloader BIOS', { bootloader: 'BIOS' }],
    ['enableParavirtualization true', { enableParavirtualization: true }],
    ['terminationGracePeriodSeconds 60', { terminationGracePeriodSeconds: 60 }],
    ['liveMigrationPolicy PreferSafe', { liveMigrationPolicy: 'PreferSafe' }],
    ['disruptions.restartApprovalMode Manual', { disruptions: { restartApprovalMode: 'Manual' } }],
    ['empty metadata', {}],
  ])('ignores the platform default %s', (_, extra) => {
    const plain: VirtualMachineTemplate = { spec: { cpu: { cores: 1 } } };
    const defaulted: VirtualMachineTemplate = {
      metadata: {},
      spec: { cpu: { cores: 1 }, ...extra },
    };
    expect(templateHash(defaulted)).toBe(templateHash(plain));
  });

  it.each<[string, Record<string, unknown>]>([
    ['runPolicy AlwaysOn', { runPolicy: 'AlwaysOn' }],
    ['osType Windows', { osType: 'Windows' }],
    ['bootloader EFI', { bootloader: 'EFI' }],
    ['terminationGracePeriodSeconds 30', { terminationGracePeriodSeconds: 30 }],
    ['restartApprovalMode Automatic', { disruptions: { restartApprovalMode: 'Automatic' } }],
  ])('a non-default %s changes the hash', (_, extra) => {
    const plain: VirtualMachineTemplate = { spec: { cpu: { cores: 1 } } };
    expect(templateHash({ spec: { cpu: { cores: 1 }, ...extra } })).not.toBe(templateHash(plain));
  });

  it('covers metadata: a label-only change is a new revision', () => {
    const labelled = { ...base, metadata: { labels: { team: 'ci' } } };
    expect(templateHash(labelled)).not.toBe(templateHash(base));
  });

  it('is sensitive to blockDeviceRefs order (boot order)', () => {
    const refs = base.spec!.blockDeviceRefs!;
    const swapped = {
      ...base,
      spec: { ...base.spec, blockDeviceRefs: [refs[1]!, refs[0]!, refs[2]!] },
    };
    expect(templateHash(swapped)).not.toBe(templateHash(base));
  });

  it('does not mutate the template while dropping defaults', () => {
    const t: VirtualMachineTemplate = { spec: { runPolicy: 'AlwaysOnUnlessStoppedManually' } };
    templateHash(t);
    expect(t.spec?.runPolicy).toBe('AlwaysOnUnlessStoppedManually');
  });
});

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
});
