/**
 * The aggregated API's read-only answers about a pool: its metadata (what kubectl reads before a
 * subresource call) and the victims preview. Both read live state with consistent reads.
 * @module
 */
import type { Preview } from '../domain/index.js';
import { malformedMessage, previewVictims, selectorOf } from '../domain/index.js';
import type { Status } from '../api/index.js';
import { poolNotFound, statusFailure } from '../api/index.js';
import type { Kube } from '../kube/index.js';

/** The most victims a preview lists (a pool is at most a few thousand members; keep answers small). */
const MAX_PREVIEW = 1000;

/** A document of the aggregated API (apiVersion of its group), or a Status. */
export type ApiAnswer =
  Status | { readonly apiVersion: string; readonly kind: string; readonly metadata: object };

/** `GET …/virtualmachinepools/{name}`: the pool's metadata under the aggregated group. */
export async function poolMeta(
  kube: Kube,
  namespace: string,
  name: string,
  apiVersion: string,
): Promise<ApiAnswer> {
  const got = await kube.getPool(namespace, name);
  if (!got.ok)
    return got.reason === 'notFound' ? poolNotFound(name) : statusFailure(500, got.message, name);
  return { apiVersion, kind: 'VirtualMachinePool', metadata: got.value.metadata };
}

/** The preview as served: `VirtualMachinePoolVictims`. */
interface VictimsDocument extends Preview {
  readonly apiVersion: string;
  readonly kind: 'VirtualMachinePoolVictims';
  readonly metadata: { readonly name: string; readonly namespace: string };
}

/**
 * `GET …/virtualmachinepools/{name}/victims?count=N` (default 1): the next N members a scale-down
 * would remove, by the reconciler's own ranking.
 */
export async function poolVictims(
  kube: Kube,
  namespace: string,
  name: string,
  countText: string | undefined,
  apiVersion: string,
): Promise<ApiAnswer> {
  const count = countText === undefined ? 1 : Number(countText);
  if (!/^\d+$/.test(countText ?? '1') || count < 1 || count > MAX_PREVIEW)
    return statusFailure(400, `count must be an integer from 1 to ${MAX_PREVIEW}`, name);
  const got = await kube.getPool(namespace, name);
  if (!got.ok)
    return got.reason === 'notFound' ? poolNotFound(name) : statusFailure(500, got.message, name);
  const vms = await kube.listVms(namespace, selectorOf(got.value));
  if (!vms.ok) return statusFailure(500, vms.message, name);
  // A member vmpool cannot read could be any rank, and the pool removes nothing meanwhile.
  const unseen = vms.malformed ?? [];
  if (unseen.length > 0) return statusFailure(409, malformedMessage(unseen), name);
  const preview = previewVictims({ pool: got.value, vms: vms.value, disks: [] }, count);
  const doc: VictimsDocument = {
    apiVersion,
    kind: 'VirtualMachinePoolVictims',
    metadata: { name, namespace },
    ...preview,
  };
  return doc;
}
