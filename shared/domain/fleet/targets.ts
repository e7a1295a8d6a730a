/**
 * scaledownwith targets recorded in the pool's annotation together with the replicas decrement, and
 * the keys of the requests carried out.
 * @module
 */
import type { RecordedTarget, VirtualMachinePool } from '../../api/index.js';
import { RecordedTarget as RecordedTargetModel, keys } from '../../api/index.js';
import { fnv1a } from '../formats/index.js';

/** How many carried-out request keys a pool remembers (a broker redelivers within minutes). */
export const REMEMBERED_REQUESTS = 32;

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

/**
 * The key of a delivered request: who sent it (the authenticated sender, as the API server named it)
 * and the CloudEvent `source` and `id` that identify the event, as 64 bits of two FNV-1a hashes, so
 * the record stays small whatever the ids look like. The sender is part of the key because `source`
 * and `id` are the sender's own words: without it one sender could choose another's ids and have
 * that sender's next event taken for a redelivery of its own.
 */
export function requestKey(sender: string, source: string, id: string): string {
  // Each length frames its field, so no other (sender, source, id) triple spells the same text.
  const text = `${String(sender.length)}:${sender}${String(source.length)}:${source}${id}`;
  // A suffix would only extend the first hash's state; a prefix starts the second from another one.
  return fnv1a(text) + fnv1a(`#${text}`);
}

/** The request keys a pool remembers, oldest first. */
export function recordedRequests(pool: VirtualMachinePool): string[] {
  const text = pool.metadata.annotations?.[keys.scaleDownRequests] ?? '';
  return text.split(' ').filter((k) => /^[0-9a-f]{16}$/.test(k));
}

/** The pool remembering `key` as carried out (the oldest keys beyond the limit forgotten). */
export function withRequest(pool: VirtualMachinePool, key: string): VirtualMachinePool {
  const remembered = [...recordedRequests(pool).filter((k) => k !== key), key];
  const annotations = {
    ...pool.metadata.annotations,
    [keys.scaleDownRequests]: remembered.slice(-REMEMBERED_REQUESTS).join(' '),
  };
  return { ...pool, metadata: { ...pool.metadata, annotations } };
}
