/**
 * Own writes read past: the watch event of an object this process wrote, at the resourceVersion the
 * write returned, once a later pass of the same reconcile read the cluster after it (its reads began
 * after the write and all succeeded). Such an event brings nothing a reconcile has not already read:
 * that pass decided from the object or a newer one, and any change since comes with a
 * resourceVersion, hence an event, of its own. reconcile-pool answers these events without
 * reconciling again. An event that arrives while the write is still held (its reconcile's next pass
 * is reading, the common case) waits for that reconcile as a coalesced delivery would.
 *
 * A reconcile's last write, the status it ends on, is read past only when planning again from what
 * it wrote asks for nothing (no action, no other status); otherwise, and for a refusal or reads that
 * failed, the writes are forgotten when the reconcile ends and their events are reconciled as any
 * other. The memory is this process's alone and holds no decision: lost (a restart) or full, events
 * are reconciled as before; another instance never sees this one's writes.
 * @module
 */
import { APISERVER_RESOURCE } from '../api/index.js';
import type { Kube, Outcome } from '../kube/index.js';

/** The identity of one version of an object. */
interface Version {
  readonly metadata?: { readonly uid?: string; readonly resourceVersion?: string };
}

/** Writes one reconcile made, held until a later pass of it reads past them or it ends. */
export interface TrackedWrites {
  /** The reconcile's Kube: its writes that return an object are held. */
  readonly kube: Kube;
  /**
   * A pass begins its reads. Call what this returns once they have all succeeded: every write held
   * when they began has then been read past. Reads that fail leave the writes held.
   */
  readsBegin(): () => void;
  /**
   * The reconcile's last write needs nothing more: planned again from what it wrote, the pool asks
   * for no action and no other status. Every write held is then as good as read past.
   */
  settled(): void;
  /** The reconcile ended: what it did not read past is forgotten (its events are reconciled). */
  end(): void;
}

/** Own writes read past, by object version (uid and resourceVersion), for one process. */
export interface OwnWrites {
  /** Tracks the writes of one reconcile made through the returned Kube. */
  track(kube: Kube): TrackedWrites;
  /**
   * True when `object` is, at its resourceVersion, a write read past (and forgets it: a second
   * delivery of the same event is reconciled). The event of a write still held by a running
   * reconcile waits until that reconcile reads past it or ends: the event often arrives while the
   * next pass reads.
   */
  readPast(object: Version): Promise<boolean>;
  /** Writes remembered as read past (for tests). */
  size(): number;
}

/**
 * Most writes remembered: a pass's burst of creates (500 VMs and their disks) several times over.
 * Beyond it the oldest are forgotten, and their events are reconciled.
 */
export const OWN_WRITES_KEPT = 10_000;

/** A write held by a running reconcile, and how its wait ends. */
interface Held {
  /** `uid@resourceVersion`: one version of one object. */
  readonly key: string;
  readonly outcome: Promise<void>;
  readonly resolve: () => void;
}

/** An {@link OwnWrites} remembering at most `kept` writes. */
export function ownWrites(kept = OWN_WRITES_KEPT): OwnWrites {
  const past = new Set<string>();
  const pending = new Map<string, Held>();
  const release = (h: Held, readPast: boolean): void => {
    if (readPast) {
      past.add(h.key);
      if (past.size > kept) past.delete(past.values().next().value as string);
    }
    pending.delete(h.key);
    h.resolve();
  };
  return {
    track(kube) {
      let held: Held[] = [];
      const hold = <T extends Version>(got: Outcome<T>): Outcome<T> => {
        const uid = got.ok ? got.value.metadata?.uid : undefined;
        const rv = got.ok ? got.value.metadata?.resourceVersion : undefined;
        if (uid === undefined || rv === undefined) return got;
        let resolve = (): void => undefined;
        const outcome = new Promise<void>((r) => (resolve = r));
        const h = { key: `${uid}@${rv}`, outcome, resolve };
        pending.set(h.key, h);
        held.push(h);
        return got;
      };
      // Every other call goes to `kube` itself (its prototype), whatever kind of object it is. A
      // disk's create is not held: the watch Trigger drops a disk's add (knative/base/eventing.yaml),
      // so its event never comes to be read past, and holding it would only fill the memory.
      const tracked: Kube = Object.assign(Object.create(kube) as Kube, {
        createVm: async (namespace, vm) => hold(await kube.createVm(namespace, vm)),
        updateVm: async (vm) => hold(await kube.updateVm(vm)),
        updateDisk: async (disk) => hold(await kube.updateDisk(disk)),
        updatePool: async (pool) => hold(await kube.updatePool(pool)),
        updatePoolStatus: async (pool) => hold(await kube.updatePoolStatus(pool)),
        updateClaimStatus: async (claim) => hold(await kube.updateClaimStatus(claim)),
      } satisfies Partial<Kube>);
      const releaseAll = (readPast: boolean): void => {
        for (const h of held) release(h, readPast);
        held = [];
      };
      return {
        kube: tracked,
        readsBegin() {
          const n = held.length;
          return () => {
            for (const h of held.slice(0, n)) release(h, true);
            held = held.slice(n);
          };
        },
        settled: () => {
          releaseAll(true);
        },
        end: () => {
          releaseAll(false);
        },
      };
    },
    async readPast(object) {
      const uid = object.metadata?.uid;
      const rv = object.metadata?.resourceVersion;
      if (uid === undefined || rv === undefined) return false;
      const key = `${uid}@${rv}`;
      await pending.get(key)?.outcome;
      return past.delete(key);
    },
    size: () => past.size,
  };
}

/** The uid and resourceVersion of `data` when it is an object that has both as strings. */
function versionOf(data: unknown): Version | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const meta = (data as { metadata?: unknown }).metadata;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const { uid, resourceVersion } = meta as Record<string, unknown>;
  return typeof uid === 'string' && typeof resourceVersion === 'string'
    ? { metadata: { uid, resourceVersion } }
    : undefined;
}

/**
 * True when `event` reports, in Resource mode, an add or update of a write read past (see the
 * module). A delete is always reconciled: its object is a version no write of ours returned.
 *
 * Asked of the event before its data is parsed as a model: a version this process wrote and read
 * past is an object it already holds, so nothing of it needs reading again (the model parse was about a
 * tenth of such an event's handling in a profile of 4,000 deliveries).
 */
export async function isOwnWriteReadPast(
  event: { readonly type: string; readonly data?: unknown },
  writes: OwnWrites,
): Promise<boolean> {
  const verb = event.type.startsWith(APISERVER_RESOURCE)
    ? event.type.slice(APISERVER_RESOURCE.length)
    : undefined;
  if (verb !== 'add' && verb !== 'update') return false;
  const version = versionOf(event.data);
  return version !== undefined && writes.readPast(version);
}
