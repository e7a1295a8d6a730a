/**
 * A watch bridge for machines without the Knative adapter binary: it watches pools, VMs, disks and
 * claims and POSTs the same Resource-mode CloudEvents the ApiServerSource adapter would (binary mode).
 * @module
 */
import { randomUUID } from 'node:crypto';
import { Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { CLAIM_API_VERSION, GROUP, VERSION } from '../shared/api/index.js';

/** What the bridge watches: each resource under its own group and version. */
const WATCHED: readonly (readonly [apiVersion: string, plural: string])[] = [
  [`${GROUP}/${VERSION}`, 'virtualmachinepools'],
  [`${GROUP}/${VERSION}`, 'virtualmachines'],
  [`${GROUP}/${VERSION}`, 'virtualdisks'],
  // Claims are in vmpool's own group, whatever group pools are served in.
  [CLAIM_API_VERSION, 'virtualmachineclaims'],
];

const VERBS: Readonly<Record<string, string>> = {
  ADDED: 'add',
  MODIFIED: 'update',
  DELETED: 'delete',
};

/**
 * The binary-mode CloudEvent headers (but `ce-id`) the adapter sends for `obj`, `verb` being
 * add, update or delete: the subject is the object's path under its own apiVersion.
 */
export function eventHeaders(
  verb: string,
  obj: Record<string, unknown>,
  server: string,
): Record<string, string> {
  const meta = (obj.metadata ?? {}) as { name?: string; namespace?: string };
  const kind = typeof obj.kind === 'string' ? obj.kind : '';
  const plural = `${kind.toLowerCase()}s`;
  const apiVersion = typeof obj.apiVersion === 'string' ? obj.apiVersion : '';
  return {
    'content-type': 'application/json',
    'ce-specversion': '1.0',
    'ce-type': `dev.knative.apiserver.resource.${verb}`,
    'ce-source': server,
    'ce-subject': `/apis/${apiVersion}/namespaces/${meta.namespace ?? ''}/${plural}/${meta.name ?? ''}`,
    'ce-kind': kind,
    'ce-apiversion': apiVersion,
    'ce-name': meta.name ?? '',
    'ce-namespace': meta.namespace ?? '',
  };
}

/** Starts the bridge; stop() ends every watch. */
export function startBridge(
  kc: KubeConfig,
  sink: string,
  log: (line: string) => void,
): { stop(): void } {
  const server = kc.getCurrentCluster()?.server ?? '';
  let stopped = false;
  const controllers: AbortController[] = [];
  const send = async (type: string, obj: Record<string, unknown>): Promise<void> => {
    await fetch(sink, {
      method: 'POST',
      headers: { ...eventHeaders(type, obj, server), 'ce-id': randomUUID() },
      body: JSON.stringify(obj),
    }).catch((err: unknown) => {
      log(`bridge: delivery failed: ${String(err)}`);
    });
  };
  const watchOne = (path: string): void => {
    if (stopped) return;
    void new Watch(kc)
      .watch(
        path,
        {},
        (phase: string, obj: Record<string, unknown>) => {
          const verb = VERBS[phase];
          if (verb !== undefined) void send(verb, obj);
        },
        () => {
          // The watch ended (timeout or error): start again; the resync tick covers the gap.
          setTimeout(() => {
            watchOne(path);
          }, 1000);
        },
      )
      .then((c) => controllers.push(c))
      .catch(() =>
        setTimeout(() => {
          watchOne(path);
        }, 1000),
      );
  };
  for (const [apiVersion, plural] of WATCHED) watchOne(`/apis/${apiVersion}/${plural}`);
  return {
    stop: () => {
      stopped = true;
      for (const c of controllers) c.abort();
    },
  };
}
