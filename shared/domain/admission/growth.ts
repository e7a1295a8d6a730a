/**
 * How far one write may grow a pool: a cluster-wide ceiling on `spec.replicas` (refused above it)
 * and a warning when one change grows a pool more than tenfold — a mistaken scale (an extra zero)
 * is caught before it costs the API server thousands of VMs.
 * @module
 */
import type { AdmissionRequest } from '../../api/index.js';

/** The ceiling when none is configured: well above any pool this project measured, far below harm. */
export const DEFAULT_MAX_REPLICAS = 10_000;

/** Where the ceiling is configured (the scale-validate webhook's environment). */
export const MAX_REPLICAS_ENV = 'VMPOOL_MAX_REPLICAS';

/** A change this many times the old size (or the floor below) draws a warning. */
const WARN_FACTOR = 10;
const WARN_FLOOR = 10;

/** What admission says of a change of replicas. */
export interface Growth {
  /** Why the change is refused (422), if it is. */
  readonly refusal?: string;
  /** Shown by kubectl as `Warning: …`. */
  readonly warning?: string;
}

/** Parses the configured ceiling: a positive integer, or the default when unset. */
export function parseMaxReplicas(text: string | undefined): number | Error {
  if (text === undefined || text.trim() === '') return DEFAULT_MAX_REPLICAS;
  const n = Number(text);
  return Number.isSafeInteger(n) && n > 0
    ? n
    : new Error(`${MAX_REPLICAS_ENV} must be a positive integer, not "${text}"`);
}

/** Judges a change of replicas from `from` (undefined: a new pool) to `to` under `maxReplicas`. */
export function judgeGrowth(
  pool: string,
  from: number | undefined,
  to: number,
  maxReplicas: number,
  field = 'spec.replicas',
): Growth {
  const was = from ?? 0;
  if (to <= was) return {};
  if (to > maxReplicas)
    return {
      refusal: `${field}: ${to} is above the largest pool this cluster allows, ${maxReplicas} replicas (set by the cluster admin: ${MAX_REPLICAS_ENV} of the scale-validate webhook)`,
    };
  if (to <= WARN_FACTOR * Math.max(was, WARN_FLOOR)) return {};
  return {
    warning: `VirtualMachinePool "${pool}" grows from ${was} to ${to} replicas, more than tenfold in one change. If that is a mistake, scale back now: vmpool creates at most one burst of VMs at a time and stops creating when the desire drops.`,
  };
}

/** The VMs a pool or Scale object in a review asks for (replicas plus a pool's standby), if it says. */
function sizeOf(o: unknown): { readonly vms: number; readonly standby: boolean } | undefined {
  const spec = (o as { spec?: { replicas?: unknown; standby?: { replicas?: unknown } } } | null)
    ?.spec;
  if (typeof spec?.replicas !== 'number') return undefined;
  const standby = spec.standby?.replicas;
  return typeof standby === 'number' && standby > 0
    ? { vms: spec.replicas + standby, standby: true }
    : { vms: spec.replicas, standby: false };
}

/**
 * The growth an AdmissionReview asks for (a pool CREATE or UPDATE, or a `/scale` UPDATE): a pool's
 * replicas and standby together; other requests, and objects without a number of replicas, grow
 * nothing (validation speaks of those).
 */
export function replicaGrowthOf(req: AdmissionRequest, maxReplicas: number): Growth {
  if (req.resource.resource !== 'virtualmachinepools') return {};
  const sub = req.subResource ?? '';
  if (sub !== '' && sub !== 'scale') return {};
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return {};
  const to = sizeOf(req.object);
  if (to === undefined) return {};
  const from = req.operation === 'UPDATE' ? sizeOf(req.oldObject)?.vms : undefined;
  const field = to.standby ? 'spec.replicas + spec.standby.replicas' : 'spec.replicas';
  return judgeGrowth(req.name ?? '', from, to.vms, maxReplicas, field);
}
