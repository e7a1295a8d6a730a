/**
 * scaledownwith targets recorded in the pool's annotation together with the replicas decrement.
 * @module
 */
import type { RecordedTarget, VirtualMachinePool } from '../api/index.js';
import { RecordedTarget as RecordedTargetModel, keys } from '../api/index.js';

/** The targets recorded on a pool (an unreadable annotation counts as none). */
export function recordedTargets(pool: VirtualMachinePool): RecordedTarget[] {
  const text = pool.metadata.annotations?.[keys.scaleDownTargets];
  if (text === undefined || text === '') return [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return [];
  }
  const parsed = RecordedTargetModel.array().safeParse(raw);
  return parsed.success ? parsed.data : [];
}

/** The pool with its recorded targets replaced (the annotation removed when none remain). */
export function withTargets(
  pool: VirtualMachinePool,
  targets: readonly RecordedTarget[],
): VirtualMachinePool {
  const annotations = { ...pool.metadata.annotations };
  if (targets.length === 0) delete annotations[keys.scaleDownTargets];
  else
    annotations[keys.scaleDownTargets] = JSON.stringify(
      targets.map((t) => ({ name: t.name, uid: t.uid })),
    );
  return { ...pool, metadata: { ...pool.metadata, annotations } };
}
