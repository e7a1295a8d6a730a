/**
 * Names of generated objects, exactly as the reference implementation makes them.
 * @module
 */

/** Kubernetes `util/rand` alphabet: no vowels, no 0/1/3, so names never spell words. */
export const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
/** Random suffix length of VM names (`<pool>-xxxxx`). */
export const VM_SUFFIX = 5;
/** Random suffix length of Retain disk names (`<pool>-<template>-xxxxxx`). */
export const DISK_SUFFIX = 6;
/** Longest pool name whose VM names stay within 63 characters. */
export const MAX_POOL_NAME = 57;

/** Injected randomness: returns a float in [0, 1), like Math.random, but supplied by the caller. */
export type Rand = () => number;

/** `n` characters from {@link ALPHABET}. */
export function suffix(rand: Rand, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) {
    const r = Math.min(Math.max(rand(), 0), 0.999999999);
    s += ALPHABET.charAt(Math.floor(r * ALPHABET.length));
  }
  return s;
}

/** A fresh VM name for a pool. */
export function vmName(pool: string, rand: Rand): string {
  return `${pool}-${suffix(rand, VM_SUFFIX)}`;
}

/** The name of a replica's Delete-policy disk: `<vm>-<template>`. */
export function deleteDiskName(vm: string, template: string): string {
  return `${vm}-${template}`;
}

/** A fresh name for a pool-owned Retain disk. */
export function retainDiskName(pool: string, template: string, rand: Rand): string {
  return `${pool}-${template}-${suffix(rand, DISK_SUFFIX)}`;
}

/** True when `name` has the shape of a Retain disk of this pool and template. */
export function isRetainDiskName(name: string, pool: string, template: string): boolean {
  const prefix = `${pool}-${template}-`;
  if (!name.startsWith(prefix) || name.length !== prefix.length + DISK_SUFFIX) return false;
  return /^[bcdfghjklmnpqrstvwxz2456789]+$/.test(name.slice(prefix.length));
}

/** An RFC 1123 label: what a namespace name must be (at most 63 characters). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** True when `s` is an RFC 1123 label (a namespace name). */
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && DNS_LABEL.test(s);
}

/** True when `s` is an RFC 1123 subdomain (the name of most objects, pools and VMs included). */
export function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && s.split('.').every(isDnsLabel);
}

/**
 * Why a namespace and object name that arrived from outside (a URL path, a CloudEvent) cannot
 * address an object, or undefined when they can. Checked before any API call: a name such as `..`
 * would otherwise become a path segment of the API request and address something else.
 */
export function invalidObjectKey(namespace: string, name: string): string | undefined {
  if (!isDnsLabel(namespace)) return `namespace "${namespace}" is not a valid namespace name`;
  if (!isDnsSubdomain(name)) return `name "${name}" is not a valid object name`;
  return undefined;
}
