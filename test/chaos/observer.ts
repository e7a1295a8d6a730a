/**
 * A watch-based observer of one namespace: every VM and disk version, in resourceVersion order, so
 * laws L1-L3 are checked on what the API server actually stored, not on what the functions believe.
 *
 * resourceVersions are compared as numbers: with one etcd behind one kube-apiserver they are etcd
 * revisions, which order events of different resources.
 * @module
 */
import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { GROUP, VERSION, keys } from '../../shared/api/index.js';
import { CREATE_BURST } from '../../shared/domain/index.js';
import { DesireLedger, desireOf } from './desire.js';
import type { PoolSeen } from './desire.js';
import { adminKubeConfig } from './kit.js';

/** An object as the watch delivers it. */
export interface Seen {
  readonly metadata: {
    readonly name: string;
    readonly uid: string;
    readonly resourceVersion: string;
    readonly creationTimestamp: string;
    readonly deletionTimestamp?: string;
    readonly generation?: number;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
    readonly ownerReferences?: ReadonlyArray<{ kind: string; name: string; uid: string }>;
  };
  readonly spec?: { blockDeviceRefs?: ReadonlyArray<{ kind: string; name: string }> };
  readonly status?: { nodeName?: string; phase?: string };
}

interface Version {
  readonly rv: number;
  readonly live: boolean;
  readonly refs: readonly string[];
}

/** A deletion (deletionTimestamp set, or gone) seen at a revision. */
export interface Deletion {
  readonly name: string;
  readonly uid: string;
  readonly pool: string;
  readonly rv: number;
  /** The annotations the VM carried when it was deleted (protection, drain marks). */
  readonly annotations: Readonly<Record<string, string>>;
  /** Its labels then (a standby member carries the standby label). */
  readonly labels: Readonly<Record<string, string>>;
  /** Its deletionTimestamp (undefined when it vanished at once). */
  readonly at?: string;
  /** When the watch delivered the deletion (ms since the epoch): no earlier than the deletion. */
  readonly seen: number;
}

const rvOf = (o: Seen): number => Number(o.metadata.resourceVersion);
const poolOf = (o: Seen): string => o.metadata.labels?.[keys.pool] ?? '';
/** A standby member: not a replica (L1 counts it against standby.replicas). */
export const isStandbySeen = (o: Seen): boolean => o.metadata.labels?.[keys.standby] === 'true';

/** What a frozen pool's members looked like when frozen (a paused pool must not change them). */
interface Frozen {
  readonly members: ReadonlyMap<string, string>;
  /** A member the test itself deletes meanwhile. */
  allowed: string | undefined;
}

/** What vmpool owns on a member: its spec generation, labels and annotations. */
const ownedState = (o: Seen): string =>
  JSON.stringify([o.metadata.generation, o.metadata.labels, o.metadata.annotations]);

/** The VirtualDisk names a VM references. */
export function diskRefsOf(o: Seen): string[] {
  return (o.spec?.blockDeviceRefs ?? []).filter((r) => r.kind === 'VirtualDisk').map((r) => r.name);
}

/** The observer of one namespace. */
export class Observer {
  readonly vms = new Map<string, Seen>();
  readonly disks = new Map<string, Seen>();
  /** Pools of the namespace (their spec is the desire the ledger records). */
  readonly pools = new Map<string, Seen>();
  /**
   * L1 against the desire at each instant, judged at each {@link sync}; its `burst` is the create
   * burst of the functions under test (set it when they run with a small one).
   */
  readonly desire = new DesireLedger(CREATE_BURST);
  readonly violations: string[] = [];
  readonly vmDeletions: Deletion[] = [];
  readonly diskDeletions: Deletion[] = [];
  /** Events seen, for the figures. */
  events = 0;
  /** Watches resumed after they ended. */
  resumes = 0;
  private readonly history = new Map<string, Version[]>();
  private readonly hold = new Map<string, { replicas: number; standby?: number }>();
  private readonly frozen = new Map<string, Frozen>();
  /** Whether each member was last seen in the standby (undefined: not seen yet). */
  private readonly partition = new Map<string, boolean>();
  /** Pools with a disruption budget, and members seen Running (a later non-Running is a restart). */
  private readonly budgets = new Map<string, number>();
  private readonly ranBefore = new Set<string>();
  /** The most members of a budgeted pool seen restarting at once. */
  readonly restartingMax = new Map<string, number>();
  private readonly retired = new Set<string>();
  private readonly deletedUids = new Set<string>();
  private readonly aborts: Array<() => void> = [];
  private stopped = false;
  /** VMs first seen Terminating (a finalizer held them), not gone at once. */
  terminatingSeen = 0;
  private checkedDisks = 0;
  private readonly namespace: string;
  private readonly kc: KubeConfig;

  private constructor(namespace: string, kc: KubeConfig) {
    this.namespace = namespace;
    this.kc = kc;
  }

  /**
   * Starts watching VMs and disks of `namespace` (from now; the namespace should be fresh), on the
   * shared plane unless `kc` names another.
   */
  static async start(namespace: string, kc: KubeConfig = adminKubeConfig()): Promise<Observer> {
    const o = new Observer(namespace, kc);
    await Promise.all([
      o.watch('virtualmachines', o.vms),
      o.watch('virtualdisks', o.disks),
      o.watch('virtualmachinepools', o.pools),
    ]);
    return o;
  }

  get namespaceName(): string {
    return this.namespace;
  }

  /**
   * L1: from now on, no create may take `pool` above `replicas` members (Terminating and draining
   * included). The L1 allows `replicas` plus the draining members asked to leave; vmpool keeps
   * this stricter bound, because a draining member is never replaced and a scale-up takes drains
   * back before it creates, so the stricter check is the one that runs.
   */
  holdReplicas(pool: string, replicas: number, standby?: number): void {
    this.hold.set(pool, standby === undefined ? { replicas } : { replicas, standby });
  }

  /**
   * A paused pool: from now until {@link thaw}, no member may be created, deleted (but `allowed`,
   * which the test deletes itself) or have its spec, labels or annotations changed.
   */
  freeze(pool: string, allowed?: string): void {
    const members = new Map(this.members(pool).map((m) => [m.metadata.name, ownedState(m)]));
    this.frozen.set(pool, { members, allowed });
  }

  /** Ends {@link freeze}. */
  thaw(pool: string): void {
    this.frozen.delete(pool);
  }

  /**
   * The pool restarts at most `budget` members at once (rollout.maxUnavailable): a member seen
   * Running that is no longer Running and not Terminating is restarting.
   */
  budget(pool: string, budget: number): void {
    this.budgets.set(pool, budget);
  }

  /** The pool is being deleted by the test: the garbage collector's cascade is not vmpool's doing. */
  retire(pool: string): void {
    this.retired.add(pool);
  }

  /** Members of a pool (Terminating included). */
  members(pool: string): Seen[] {
    return [...this.vms.values()].filter((v) => poolOf(v) === pool);
  }

  /** Members of a pool that are not Terminating. */
  live(pool: string): Seen[] {
    return this.members(pool).filter((v) => v.metadata.deletionTimestamp === undefined);
  }

  /** Disks carrying a pool's label. */
  poolDisks(pool: string): Seen[] {
    return [...this.disks.values()].filter((d) => poolOf(d) === pool);
  }

  /**
   * Waits until the observer has seen everything a fresh list returns, then judges L1 against the
   * desire at each instant up to the pools' list (their history is complete up to there).
   */
  async sync(timeoutMs = 15_000): Promise<void> {
    const api = this.kc.makeApiClient(CustomObjectsApi);
    const listed = async (plural: string): Promise<Map<string, string>> => {
      const l = (await api.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural,
        namespace: this.namespace,
      })) as { items: Seen[]; metadata: { resourceVersion: string } };
      const m = new Map(l.items.map((i) => [i.metadata.name, i.metadata.resourceVersion]));
      if (plural === 'virtualmachinepools') listedPools = Number(l.metadata.resourceVersion);
      return m;
    };
    let listedPools = 0;
    const same = (want: Map<string, string>, have: Map<string, Seen>): boolean =>
      want.size === have.size &&
      [...want].every(([n, rv]) => have.get(n)?.metadata.resourceVersion === rv);
    const all = (): Promise<Array<Map<string, string>>> =>
      Promise.all(['virtualmachines', 'virtualdisks', 'virtualmachinepools'].map(listed));
    const caughtUp = ([vms, disks, pools]: Array<Map<string, string>>): boolean =>
      same(vms!, this.vms) && same(disks!, this.disks) && same(pools!, this.pools);
    const lists = await all();
    const deadline = Date.now() + timeoutMs;
    while (!caughtUp(lists)) {
      if (Date.now() > deadline) {
        // Objects may keep changing after the list (the garbage collector, the simulator's status
        // writes): list again a few times, so a moving namespace is not taken for a stuck watch.
        let again = false;
        for (let i = 0; i < 10 && !again; i++) {
          again = caughtUp(await all());
          if (!again) await new Promise((r) => setTimeout(r, 500));
        }
        if (again) break;
        throw new Error(`observer of ${this.namespace} did not catch up with a list`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    this.violations.push(...this.desire.check(listedPools));
  }

  /**
   * L3 (first half): no disk was deleted while a live member referenced it. Checked on the recorded
   * histories, so the order in which the two watches delivered does not matter.
   */
  checkDiskDeletions(): void {
    for (; this.checkedDisks < this.diskDeletions.length; this.checkedDisks++) {
      const d = this.diskDeletions[this.checkedDisks]!;
      if (this.retired.has(d.pool)) continue;
      for (const [vm, versions] of this.history) {
        let at: Version | undefined;
        for (const v of versions) if (v.rv <= d.rv) at = v;
        if (at?.live === true && at.refs.includes(d.name))
          this.violations.push(
            `L3: disk ${d.name} deleted at rv ${d.rv} while live member ${vm} referenced it`,
          );
      }
    }
  }

  private halted(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
    for (const a of this.aborts) a();
  }

  private onVm(type: string, o: Seen): void {
    const name = o.metadata.name;
    const live = type !== 'DELETED' && o.metadata.deletionTimestamp === undefined;
    const versions = this.history.get(name) ?? [];
    versions.push({ rv: rvOf(o), live, refs: diskRefsOf(o) });
    this.history.set(name, versions);
    if (!live && !this.deletedUids.has(o.metadata.uid)) {
      this.deletedUids.add(o.metadata.uid);
      if (type !== 'DELETED') this.terminatingSeen++;
      this.vmDeletions.push({
        name,
        uid: o.metadata.uid,
        pool: poolOf(o),
        rv: rvOf(o),
        annotations: o.metadata.annotations ?? {},
        labels: o.metadata.labels ?? {},
        ...(o.metadata.deletionTimestamp === undefined ? {} : { at: o.metadata.deletionTimestamp }),
        seen: Date.now(),
      });
    }
    const pool = poolOf(o);
    if (pool === '') return;
    const before = this.partition.get(name);
    this.checkL1(pool, type, o);
    this.recordAddition(pool, type, o, before);
    this.checkFrozen(pool, type, o);
    this.checkBudget(pool, o, live);
    if (live) {
      // L3 (second half): a disk is never given to two live members.
      const mine = new Set(diskRefsOf(o));
      for (const other of this.live(pool)) {
        if (other.metadata.name === name) continue;
        for (const d of diskRefsOf(other))
          if (mine.has(d))
            this.violations.push(
              `L3: disk ${d} referenced by live members ${name} and ${other.metadata.name} (rv ${rvOf(o)})`,
            );
      }
    }
  }

  /**
   * L1 at every instant: whatever adds to a pool's replicas (a create, a promotion) or to its
   * standby (a create, a return) never takes them above spec.replicas or standby.replicas
   * (Terminating and draining members counted). Promotions and returns are label flips, MODIFIED
   * events, so the partition a member is in is remembered between events.
   */
  private checkL1(pool: string, type: string, o: Seen): void {
    const name = o.metadata.name;
    const standby = isStandbySeen(o);
    const before = this.partition.get(name);
    if (type === 'DELETED') this.partition.delete(name);
    else this.partition.set(name, standby);
    const held = this.hold.get(pool);
    if (held === undefined || type === 'DELETED' || before === standby) return;
    const all = this.members(pool);
    const spares = held.standby === undefined ? 0 : all.filter(isStandbySeen).length;
    const replicas = all.length - spares;
    if (!standby || held.standby === undefined) {
      if (replicas > held.replicas)
        this.violations.push(
          `L1: ${pool} has ${replicas} replicas after ${type} ${name}, replicas ${held.replicas}`,
        );
    } else if (spares > held.standby)
      this.violations.push(
        `L1: ${pool} has ${spares} standby members after ${type} ${name}, standby ${held.standby}`,
      );
  }

  /** A create, promotion or return, for the ledger to judge against the desire at its revision. */
  private recordAddition(pool: string, type: string, o: Seen, before: boolean | undefined): void {
    const standby = isStandbySeen(o);
    if (type === 'DELETED' || before === standby) return;
    if (before === undefined && o.metadata.deletionTimestamp !== undefined) return;
    const all = this.members(pool);
    const spares = all.filter(isStandbySeen).length;
    const kind =
      before === undefined ? (standby ? 'standby' : 'create') : standby ? 'return' : 'promote';
    this.desire.add({
      pool,
      name: o.metadata.name,
      rv: rvOf(o),
      kind,
      replicas: all.length - spares,
      spares,
    });
  }

  private onPool(type: string, o: Seen, listedAt?: number): void {
    const gone = type === 'DELETED';
    const rv = gone && listedAt !== undefined ? listedAt : rvOf(o);
    this.desire.desire(o.metadata.name, desireOf(o as unknown as PoolSeen, gone, rv));
  }

  private checkFrozen(pool: string, type: string, o: Seen): void {
    const f = this.frozen.get(pool);
    if (f === undefined) return;
    const name = o.metadata.name;
    const was = f.members.get(name);
    if (was === undefined) this.violations.push(`paused ${pool}: member ${name} ${type}`);
    else if (type === 'DELETED' || o.metadata.deletionTimestamp !== undefined) {
      if (name !== f.allowed) this.violations.push(`paused ${pool}: member ${name} deleted`);
    } else if (ownedState(o) !== was)
      this.violations.push(`paused ${pool}: member ${name} updated (${ownedState(o)})`);
  }

  private checkBudget(pool: string, o: Seen, live: boolean): void {
    const budget = this.budgets.get(pool);
    if (budget === undefined) return;
    if (live && o.status?.phase === 'Running') this.ranBefore.add(o.metadata.uid);
    const restarting = this.live(pool).filter(
      (m) => this.ranBefore.has(m.metadata.uid) && m.status?.phase !== 'Running',
    ).length;
    this.restartingMax.set(pool, Math.max(this.restartingMax.get(pool) ?? 0, restarting));
    if (restarting > budget)
      this.violations.push(
        `budget: ${pool} has ${restarting} members restarting at once, maxUnavailable ${budget}`,
      );
  }

  /**
   * `listedAt`: the deletion was found by a relist at that revision, so it happened somewhere after
   * the disk's last version seen and no later than the list. L3 then takes the list's revision, the
   * latest the deletion can be: a member live there did outlive the disk. (A VM found gone keeps its
   * last version's revision, the earliest its deletion can be: both bounds only ever drop a doubt.)
   */
  private onDisk(type: string, o: Seen, listedAt?: number): void {
    if (
      (type === 'DELETED' || o.metadata.deletionTimestamp !== undefined) &&
      !this.deletedUids.has(o.metadata.uid)
    ) {
      this.deletedUids.add(o.metadata.uid);
      this.diskDeletions.push({
        name: o.metadata.name,
        uid: o.metadata.uid,
        pool: poolOf(o),
        rv: listedAt ?? rvOf(o),
        annotations: o.metadata.annotations ?? {},
        labels: o.metadata.labels ?? {},
        seen: Date.now(),
      });
    }
  }

  /** One watch event (or a change a relist found), recorded and checked. */
  private seen(
    plural: string,
    into: Map<string, Seen>,
    type: string,
    o: Seen,
    listedAt?: number,
  ): void {
    this.events++;
    if (type === 'DELETED') into.delete(o.metadata.name);
    else into.set(o.metadata.name, o);
    if (plural === 'virtualmachines') this.onVm(type, o);
    else if (plural === 'virtualmachinepools') this.onPool(type, o, listedAt);
    else this.onDisk(type, o, listedAt);
  }

  private async watch(plural: string, into: Map<string, Seen>, from?: string): Promise<void> {
    const path = `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${plural}`;
    const ctl = await new Watch(this.kc).watch(
      path,
      from === undefined ? {} : { resourceVersion: from },
      (type: string, o: Seen) => {
        if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED')
          this.seen(plural, into, type, o);
      },
      () => {
        // The API server ends watches after a while, or went away (a restart, whose new watch
        // cache may no longer reach our last revision): list again, then watch from there.
        void this.resume(plural, into);
      },
    );
    this.aborts.push(() => {
      ctl.abort();
    });
  }

  /** Lists (recording what changed meanwhile) and watches again, until the API server answers. */
  private async resume(plural: string, into: Map<string, Seen>): Promise<void> {
    const api = this.kc.makeApiClient(CustomObjectsApi);
    while (!this.stopped) {
      try {
        const l = (await api.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          plural,
          namespace: this.namespace,
        })) as { items: Seen[]; metadata: { resourceVersion: string } };
        const listed = new Map(l.items.map((i) => [i.metadata.name, i]));
        for (const [name, o] of [...into])
          if (!listed.has(name))
            this.seen(plural, into, 'DELETED', o, Number(l.metadata.resourceVersion));
        for (const [name, o] of listed) {
          const had = into.get(name);
          if (had === undefined) this.seen(plural, into, 'ADDED', o);
          else if (had.metadata.resourceVersion !== o.metadata.resourceVersion)
            this.seen(plural, into, 'MODIFIED', o);
        }
        // stop() may have come while the list was read.
        if (this.halted()) return;
        await this.watch(plural, into, l.metadata.resourceVersion);
        this.resumes++;
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
}
