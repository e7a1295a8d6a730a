/**
 * Validation of a pool at admission, with the reference's messages where it has them.
 * @module
 */
import type { DiskTemplate, VirtualMachinePool } from '../../api/index.js';
import { celMessages } from '../../api/index.js';
import { parseDuration, MAX_POOL_NAME, quantityValue } from '../formats/index.js';
import { validateClaims } from './claims.js';

/** One reason a pool is refused. */
export interface Violation {
  readonly field: string;
  readonly message: string;
}

/** Message for a pool name that would make VM names longer than 63 characters. */
export function nameTooLong(name: string): string {
  return `VirtualMachinePool name "${name}" is too long: it must be at most ${MAX_POOL_NAME} characters so that generated VirtualMachine names stay within the 63-character limit`;
}

/** Every violation of a pool spec, in the reference's order (the first is what admission reports). */
export function validatePool(pool: VirtualMachinePool): Violation[] {
  const out: Violation[] = [];
  const name = pool.metadata.name ?? '';
  if (name.length > MAX_POOL_NAME) out.push({ field: 'metadata.name', message: nameTooLong(name) });
  out.push(...validateDepth(pool));
  out.push(...validateRefs(pool));
  out.push(...validateTemplates(pool.spec.virtualDiskTemplates));
  const drain = pool.spec.scaleDown?.drainTimeout;
  if (drain !== undefined && parseDuration(drain) === undefined)
    out.push({
      field: 'spec.scaleDown.drainTimeout',
      message: `scaleDown.drainTimeout "${drain}" is not a valid duration: use a Go duration such as 30s, 10m or 1h`,
    });
  out.push(...validateLifecycle(pool));
  out.push(...validateClaims(pool));
  return out;
}

/**
 * How deep a template may nest (objects and arrays, the template itself the first level). A
 * VirtualMachine's deepest fields (affinity terms) are about a dozen levels down; pass-through fields
 * have no schema to bound them, and thousands of levels once overflowed the stack of every pass.
 */
export const MAX_TEMPLATE_DEPTH = 64;

/** True when `value` nests more than `limit` objects and arrays deep; iterative, stops at the limit. */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [v, depth] = top;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** The message for a template nested deeper than {@link MAX_TEMPLATE_DEPTH}. */
export function tooDeepMessage(field: string): string {
  return `${field} nests deeper than ${String(MAX_TEMPLATE_DEPTH)} levels of objects and arrays, the most a pool template may: no VirtualMachine or VirtualDisk field needs that many; flatten the value`;
}

/** Templates nested beyond {@link MAX_TEMPLATE_DEPTH}, checked before anything walks them. */
function validateDepth(pool: VirtualMachinePool): Violation[] {
  const templates: [string, unknown][] = [
    ['spec.virtualMachineTemplate', pool.spec.virtualMachineTemplate],
    ...pool.spec.virtualDiskTemplates.map((t, i): [string, unknown] => [
      `spec.virtualDiskTemplates[${String(i)}]`,
      t,
    ]),
  ];
  return templates
    .filter(([, t]) => nestsDeeperThan(t, MAX_TEMPLATE_DEPTH))
    .map(([field]) => ({ field, message: tooDeepMessage(field) }));
}

/** Healing, lifetime and the rollout budget: positive durations, a budget and a breaker of at least one. */
function validateLifecycle(pool: VirtualMachinePool): Violation[] {
  const out: Violation[] = [];
  const positive = (field: string, text: string | undefined): void => {
    if (text !== undefined && !((parseDuration(text) ?? 0) > 0))
      out.push({
        field: `spec.${field}`,
        message: `${field} "${text}" is not a positive duration: use a Go duration such as 30s, 10m or 24h`,
      });
  };
  positive('healing.startupTimeout', pool.spec.healing?.startupTimeout);
  positive('maxMemberAge', pool.spec.maxMemberAge);
  if (!intOrPercent(pool.spec.rollout?.maxUnavailable))
    out.push({ field: 'spec.rollout.maxUnavailable', message: celMessages.maxUnavailable });
  if (!intOrPercent(pool.spec.healing?.maxUnhealthy))
    out.push({ field: 'spec.healing.maxUnhealthy', message: celMessages.maxUnhealthy });
  return out;
}

/** Absent, an integer of at least 1, or a percentage from 1% to 100% (the CRD's CEL rule). */
function intOrPercent(v: number | string | undefined): boolean {
  if (v === undefined) return true;
  return typeof v === 'number' ? Number.isInteger(v) && v >= 1 : /^(100|[1-9][0-9]?)%$/.test(v);
}

function validateRefs(pool: VirtualMachinePool): Violation[] {
  const out: Violation[] = [];
  const spec = pool.spec.virtualMachineTemplate.spec;
  const field = 'spec.virtualMachineTemplate.spec.blockDeviceRefs';
  const refs = spec?.blockDeviceRefs;
  const templates = pool.spec.virtualDiskTemplates;
  if (refs === undefined) {
    out.push({ field, message: celMessages.everyTemplateReferenced });
    out.push({ field, message: celMessages.everyRefNamesTemplate });
    out.push({ field, message: celMessages.referencedOnce });
    if (spec?.osType === 'Legacy')
      out.push({ field: 'spec.virtualMachineTemplate.spec.osType', message: celMessages.noLegacy });
    return out;
  }
  const diskRefs = refs.filter((r) => r.kind === 'VirtualDisk');
  if (!templates.every((t) => diskRefs.some((r) => r.name === t.name)))
    out.push({ field, message: celMessages.everyTemplateReferenced });
  if (!diskRefs.every((r) => templates.some((t) => t.name === r.name)))
    out.push({ field, message: celMessages.everyRefNamesTemplate });
  if (diskRefs.length !== templates.length)
    out.push({ field, message: celMessages.referencedOnce });
  if (spec?.osType === 'Legacy')
    out.push({ field: 'spec.virtualMachineTemplate.spec.osType', message: celMessages.noLegacy });
  const seen = new Set<string>();
  const orders = new Set<number>();
  for (const r of refs) {
    const key = `${r.kind}/${r.name}`;
    if (seen.has(key))
      out.push({
        field,
        message: `cannot specify the same block device reference more than once: ${r.kind} with name "${r.name}" has a duplicate reference`,
      });
    seen.add(key);
    if (r.bootOrder !== undefined) {
      if (orders.has(r.bootOrder))
        out.push({
          field,
          message: `bootOrder ${r.bootOrder} is used by more than one block device reference`,
        });
      orders.add(r.bootOrder);
    }
  }
  return out;
}

function validateTemplates(templates: readonly DiskTemplate[]): Violation[] {
  const out: Violation[] = [];
  if (templates.length < 1 || templates.length > 16)
    out.push({
      field: 'spec.virtualDiskTemplates',
      message: `a pool needs between 1 and 16 virtualDiskTemplates, got ${templates.length}`,
    });
  const names = new Set<string>();
  templates.forEach((t, i) => {
    const field = `spec.virtualDiskTemplates[${i}]`;
    if (names.has(t.name))
      out.push({
        field: `${field}.name`,
        message: `duplicate virtualDiskTemplates name "${t.name}"`,
      });
    names.add(t.name);
    const r = t.reclaim;
    if (r !== undefined) {
      const retain = r.onScaleDown === 'Retain';
      if (!retain && (r.keep !== 0 || r.ttl !== undefined))
        out.push({ field: `${field}.reclaim`, message: celMessages.keepTtlOnlyRetain });
      if (r.keep !== 0 && r.ttl === undefined)
        out.push({ field: `${field}.reclaim`, message: celMessages.keepRequiresTtl });
      if (r.ttl !== undefined && parseDuration(r.ttl) === undefined)
        out.push({
          field: `${field}.reclaim.ttl`,
          message: `reclaim.ttl "${r.ttl}" of virtualDiskTemplates "${t.name}" is not a valid duration: use a Go duration such as 30m, 1h or 1h30m`,
        });
    }
    const size = t.spec.persistentVolumeClaim?.size;
    if (size !== undefined && !((quantityValue(size) ?? 0) > 0))
      out.push({
        field: `${field}.spec.persistentVolumeClaim.size`,
        message: `the size of virtualDiskTemplates "${t.name}" must be a positive quantity, got "${size}"`,
      });
    if (size === undefined && t.spec.dataSource === undefined)
      out.push({
        field: `${field}.spec`,
        message:
          "if the data source is not specified, it's necessary to set spec.PersistentVolumeClaim.size to create blank virtual disk",
      });
  });
  return out;
}

/**
 * The refusal of an update that lowers a disk template's size: existing disks only grow (the VM
 * platform cannot shrink a volume), so a smaller template would leave old and new replicas apart.
 */
export function sizeDecrease(
  pool: VirtualMachinePool,
  old: VirtualMachinePool,
): string | undefined {
  const before = new Map(old.spec.virtualDiskTemplates.map((t) => [t.name, t]));
  for (const t of pool.spec.virtualDiskTemplates) {
    const was = before.get(t.name)?.spec.persistentVolumeClaim?.size;
    const now = t.spec.persistentVolumeClaim?.size;
    const wasBytes = quantityValue(was);
    const nowBytes = quantityValue(now);
    if (wasBytes !== undefined && nowBytes !== undefined && nowBytes < wasBytes)
      return `virtualDiskTemplates "${t.name}": persistentVolumeClaim.size cannot be lowered from ${String(was)} to ${String(now)}; disks only grow`;
  }
  return undefined;
}
