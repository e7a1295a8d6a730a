/**
 * What a user sees in one namespace, through kubectl: commands (printed with their output when
 * `VMPOOL_E2E_TRANSCRIPT=1`), a pool's status, the Events of a reason.
 * @module
 */
import { cluster, eventMessages, read } from './harness.js';

/** kubectl and reads as a user of namespace `ns` has them. */
export interface User {
  /** kubectl in the namespace; with VMPOOL_E2E_TRANSCRIPT set, the command and output are printed. */
  kubectl(args: string[], input?: string): Promise<string>;
  /** kubectl scale of a pool. */
  scale(pool: string, replicas: number): Promise<string>;
  /** A pool's status. */
  status(pool: string): Promise<Record<string, unknown>>;
  /** The messages of the namespace's Events of `reason`. */
  events(reason: string): Promise<string[]>;
}

/** A user of namespace `ns`. */
export function userOf(ns: string): User {
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const out = await cluster().kubectl([...args, '-n', ns], input);
    if (process.env.VMPOOL_E2E_TRANSCRIPT)
      console.log(`$ kubectl ${args.join(' ')}\n${out.trimEnd()}\n`);
    return out;
  };
  return {
    kubectl,
    scale: (pool, replicas) =>
      kubectl(['scale', `virtualmachinepool/${pool}`, `--replicas=${String(replicas)}`]),
    status: async (pool) =>
      ((await read('virtualmachinepools', ns, pool))?.status ?? {}) as Record<string, unknown>,
    events: (reason) => eventMessages(ns, reason),
  };
}
