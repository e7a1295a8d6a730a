/**
 * Own writes read past: the watch event of an object this process wrote, at the resourceVersion the
 * write returned, after a later pass of the same reconcile began its reads. Such an event brings
 * nothing a reconcile has not already read: the pass that read past the write decided from that
 * object or a newer one, and any change after it comes with a resourceVersion of its own, hence an
 * event of its own. reconcile-pool answers those events without reconciling again; during a
 * scale-up they are nearly all of its deliveries (one per VM and disk it created), and each one
 * used to cost a follow-up reconcile that listed every member and disk of the pool again.
 *
 * Only writes a later pass read past count: a write after which the reconcile ended (the last
 * status write, a refusal) is forgotten, so its event is reconciled as any other. The memory is
 * this process's alone and holds no decision: lost (a restart) or full, events are reconciled as
 * before; another instance never sees this one's writes.
 * @module
 */
import type { SourceEvent } from '../api/index.js';
import { APISERVER_RESOURCE } from '../api/index.js';
import type { Kube, Outcome } from '../kube/index.js';

/** The identity of one version of an object. */
interface Version {
  readonly metadata?: { readonly uid?: string; readonly resourceVersion?: string };
}

/** Writes one reconcile made, held until a later pass of it begins its reads. */
export interface TrackedWrites {
  /** The reconcile's Kube: its writes that return an object are held. */
  readonly kube: Kube;
  /**
   * A pass begins its reads. Call what this returns once they have all succeeded: every write held
   * when they began has then been read past. Reads that fail leave the writes unremembered.
   */
  readsBegin(): () => void;
}

/** Own writes read past, by uid, for one process. */
export interface OwnWrites {
  /** Tracks the writes of one reconcile made through the returned Kube. */
  track(kube: Kube): TrackedWrites;
  /**
   * True when `object` is, at its resourceVersion, a write read past (and forgets it: a second
   * delivery of the same event is reconciled).
   */
  readPast(object: Version): boolean;
  /** Writes remembered (for tests and metrics). */
  size(): number;
}

/**
 * Most writes remembered: a pass's burst of creates (500 VMs and their disks) several times over.
 * Beyond it the oldest are forgotten, and their events are reconciled.
 */
export const OWN_WRITES_KEPT = 10_000;

/** An {@link OwnWrites} remembering at most `kept` writes. */
export function ownWrites(kept = OWN_WRITES_KEPT): OwnWrites {
  const past = new Map<string, string>();
  const remember = (uid: string, rv: string): void => {
    past.delete(uid);
    past.set(uid, rv);
    if (past.size > kept) past.delete(past.keys().next().value as string);
  };
  return {
    track(kube) {
      let held: (readonly [string, string])[] = [];
      const hold = <T extends Version>(got: Outcome<T>): Outcome<T> => {
        const uid = got.ok ? got.value.metadata?.uid : undefined;
        const rv = got.ok ? got.value.metadata?.resourceVersion : undefined;
        if (uid !== undefined && rv !== undefined) held.push([uid, rv]);
        return got;
      };
      // Every other call goes to `kube` itself (its prototype), whatever kind of object it is.
      const tracked: Kube = Object.assign(Object.create(kube) as Kube, {
        createVm: async (namespace, vm) => hold(await kube.createVm(namespace, vm)),
        createDisk: async (namespace, disk) => hold(await kube.createDisk(namespace, disk)),
        updateVm: async (vm) => hold(await kube.updateVm(vm)),
        updateDisk: async (disk) => hold(await kube.updateDisk(disk)),
        updatePool: async (pool) => hold(await kube.updatePool(pool)),
        updatePoolStatus: async (pool) => hold(await kube.updatePoolStatus(pool)),
        updateClaimStatus: async (claim) => hold(await kube.updateClaimStatus(claim)),
      } satisfies Partial<Kube>);
      return {
        kube: tracked,
        readsBegin() {
          // Writes held now; a pass whose reads fail keeps them held for the next one.
          const n = held.length;
          return () => {
            for (const [uid, rv] of held.slice(0, n)) remember(uid, rv);
            held = held.slice(n);
          };
        },
      };
    },
    readPast(object) {
      const uid = object.metadata?.uid;
      const rv = object.metadata?.resourceVersion;
      if (uid === undefined || rv === undefined || past.get(uid) !== rv) return false;
      past.delete(uid);
      return true;
    },
    size: () => past.size,
  };
}

/**
 * True when `event` reports, in Resource mode, an add or update of a write read past (see the
 * module). A delete is always reconciled: its object is a version no write of ours returned.
 */
export function isOwnWriteReadPast(event: SourceEvent, writes: OwnWrites): boolean {
  const verb = event.type.startsWith(APISERVER_RESOURCE)
    ? event.type.slice(APISERVER_RESOURCE.length)
    : undefined;
  return (
    (verb === 'add' || verb === 'update') &&
    typeof event.data === 'object' &&
    event.data !== null &&
    writes.readPast(event.data)
  );
}
