/**
 * Server-side apply of manifests for the local runtime (CRDs, webhook, APIService, the sample).
 * @module
 */
import { KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';

/** Applies objects in order with field manager `vmpool-start`; rejects with the API server's words. */
export async function applyAll(kc: KubeConfig, objects: readonly object[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const o of objects) {
    try {
      await api.patch(o, undefined, undefined, 'vmpool-start', true, PatchStrategy.ServerSideApply);
    } catch (err) {
      const body = (err as { body?: unknown }).body;
      const what = `${(o as KubernetesObject).kind ?? ''}/${(o as KubernetesObject).metadata?.name ?? ''}`;
      throw new Error(`apply ${what}: ${typeof body === 'string' ? body : String(err)}`, {
        cause: err,
      });
    }
  }
}

/** Deletes objects, ignoring those already gone. */
export async function deleteAll(kc: KubeConfig, objects: readonly object[]): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const o of objects) {
    await api.delete(o as KubernetesObject).catch(() => undefined);
  }
}
