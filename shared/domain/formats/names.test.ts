import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../test/unit/builders.js';
import {
  ALPHABET,
  DISK_SUFFIX,
  MAX_POOL_NAME,
  VM_SUFFIX,
  deleteDiskName,
  invalidObjectKey,
  isDnsLabel,
  isDnsSubdomain,
  isRetainDiskName,
  retainDiskName,
  suffix,
  vmName,
} from './names.js';

const onlyAlphabet = /^[bcdfghjklmnpqrstvwxz2456789]*$/;

describe('names', () => {
  it('uses the Kubernetes util/rand alphabet: 27 characters, no vowels, no 0/1/3', () => {
    expect(ALPHABET).toBe('bcdfghjklmnpqrstvwxz2456789');
    expect(ALPHABET).toHaveLength(27);
    expect(ALPHABET).not.toMatch(/[aeiou013]/);
    expect([VM_SUFFIX, DISK_SUFFIX, MAX_POOL_NAME]).toEqual([5, 6, 57]);
  });

  it.each([
    [0, 'b'],
    [0.999999, '9'],
    [1, '9'],
    [-0.5, 'b'],
    [1.5, '9'],
  ])('suffix clamps rand %s to a valid character %s', (r, ch) => {
    expect(suffix(() => r, 3)).toBe(ch.repeat(3));
  });

  it('suffix has exactly n characters from the alphabet', () => {
    const rand = seededRandom(7);
    for (const n of [0, 1, 5, 6, 20]) {
      const s = suffix(rand, n);
      expect(s).toHaveLength(n);
      expect(s).toMatch(onlyAlphabet);
    }
  });

  it('vmName is <pool>-<5 chars>, deterministic for a seed', () => {
    const a = vmName('runners', seededRandom(1));
    expect(a).toMatch(/^runners-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(vmName('runners', seededRandom(1))).toBe(a);
  });

  it('a 57-character pool name yields a 63-character VM name', () => {
    expect(vmName('p'.repeat(MAX_POOL_NAME), seededRandom(2))).toHaveLength(63);
  });

  it.each([
    ['runners-abcde', 'root', 'runners-abcde-root'],
    ['a', 'b', 'a-b'],
  ])('deleteDiskName(%s, %s) = %s', (vm, t, want) => {
    expect(deleteDiskName(vm, t)).toBe(want);
  });

  it('retainDiskName is <pool>-<template>-<6 chars> and is recognised', () => {
    const n = retainDiskName('runners', 'cache', seededRandom(3));
    expect(n).toMatch(/^runners-cache-[bcdfghjklmnpqrstvwxz2456789]{6}$/);
    expect(isRetainDiskName(n, 'runners', 'cache')).toBe(true);
  });

  it.each([
    ['runners-cache-bcdfgh', true],
    ['runners-cache-bcdfg', false], // 5 chars
    ['runners-cache-bcdfghj', false], // 7 chars
    ['runners-cache-abcdef', false], // vowel
    ['runners-cache-bcd0fg', false], // digit 0
    ['runners-root-bcdfgh', false], // other template
    ['other-cache-bcdfgh', false], // other pool
    ['runners-x2-cache-bcdfgh', false],
  ])('isRetainDiskName(%s, runners, cache) = %s', (name, want) => {
    expect(isRetainDiskName(name, 'runners', 'cache')).toBe(want);
  });
});

describe('names from outside (paths, CloudEvents)', () => {
  it.each(['ci', 'a-b', 'x'.repeat(63), '0'])('"%s" is a namespace name', (s) => {
    expect(isDnsLabel(s)).toBe(true);
  });
  it.each(['', '..', '.', 'A', 'a_b', '-a', 'a-', 'a.b', 'x'.repeat(64), 'a/b', '%2e%2e'])(
    '"%s" is not a namespace name',
    (s) => {
      expect(isDnsLabel(s)).toBe(false);
    },
  );
  it('object names are subdomains: dots between labels, at most 253 characters', () => {
    expect(isDnsSubdomain('runners')).toBe(true);
    expect(isDnsSubdomain('a.b-c.d')).toBe(true);
    expect(isDnsSubdomain(`${'a'.repeat(63)}.${'b'.repeat(63)}`)).toBe(true);
    for (const bad of ['', '..', 'a..b', '.a', 'a.', 'A', 'a b', 'a/b', 'x'.repeat(254)])
      expect(isDnsSubdomain(bad)).toBe(false);
  });
  it('says which half of a key is wrong', () => {
    expect(invalidObjectKey('ci', 'runners')).toBeUndefined();
    expect(invalidObjectKey('..', 'runners')).toContain('namespace "..');
    expect(invalidObjectKey('ci', '..')).toContain('name ".."');
  });
});
