/**
 * L1 against the desire at each instant (DESIGN.md L1): every create or promotion the VM watch saw at
 * revision X must leave the pool within the desire in force at X (spec.replicas; 0 once paused,
 * Terminating or gone), except for at most one burst of creates after a drop of the desire.
 *
 * The pool watch and the VM watch deliver in their own order, so additions are recorded as they come
 * and judged at checkpoints, once the pool history is known complete up to their revision.
 * @module
 */

/** What a pool asked for from one revision on. */
export interface Desire {
  readonly rv: number;
  readonly replicas: number;
  /** `spec.standby.replicas` (undefined: no standby, every member counts as a replica). */
  readonly standby?: number;
}

/** A pool as the pool watch delivers it (the fields the desire is made of). */
export interface PoolSeen {
  readonly metadata: {
    readonly name: string;
    readonly resourceVersion: string;
    readonly deletionTimestamp?: string;
  };
  readonly spec?: {
    readonly replicas?: number;
    readonly paused?: boolean;
    readonly standby?: { readonly replicas?: number };
    readonly claims?: { readonly maxReplicas?: number };
  };
}

/** An addition to a pool seen on the VM watch, with the pool's members right after it. */
export interface Addition {
  readonly pool: string;
  readonly name: string;
  readonly rv: number;
  /** `create` (a replica), `standby` (a standby member created), `promote`, `return`. */
  readonly kind: 'create' | 'standby' | 'promote' | 'return';
  /** Members not in the standby, and in it (Terminating and draining included). */
  readonly replicas: number;
  readonly spares: number;
}

/**
 * The desire of a pool version at `rv`: 0 when paused, Terminating or `gone` (deleted). With
 * `spec.claims` the effective target also depends on the claims, which this watch does not see: it
 * is bounded by max(spec.replicas, claims.maxReplicas), the bound judged here (the property test of
 * claims checks the exact target).
 */
export function desireOf(p: PoolSeen, gone: boolean, rv: number): Desire {
  if (gone || p.metadata.deletionTimestamp !== undefined || p.spec?.paused === true)
    return p.spec?.standby === undefined ? { rv, replicas: 0 } : { rv, replicas: 0, standby: 0 };
  const replicas = Math.max(p.spec?.replicas ?? 0, p.spec?.claims?.maxReplicas ?? 0);
  const standby = p.spec?.standby?.replicas;
  return p.spec?.standby === undefined ? { rv, replicas } : { rv, replicas, standby: standby ?? 0 };
}

type Dimension = 'replicas' | 'standby';

/** Desire histories of a namespace's pools and the additions still to judge. */
export class DesireLedger {
  /** Creates allowed above the desire after a drop (the function's create burst). */
  burst: number;
  /** Additions judged so far, and those let through inside the grace of a drop. */
  checked = 0;
  graced = 0;
  private readonly history = new Map<string, Desire[]>();
  private readonly pending: Addition[] = [];
  private readonly all: Addition[] = [];
  /** Over-desire creates counted per drop (`pool/dimension/rv`). */
  private readonly spent = new Map<string, number>();

  constructor(burst: number) {
    this.burst = burst;
  }

  /** A pool version (or its deletion, `gone`) seen at `rv`. */
  desire(pool: string, d: Desire): void {
    const h = this.history.get(pool) ?? [];
    const last = h.at(-1);
    // A relist may repeat a version already seen.
    if (last !== undefined && last.rv >= d.rv) return;
    h.push(d);
    this.history.set(pool, h);
  }

  /** The desire history of `pool`, oldest first. */
  historyOf(pool: string): readonly Desire[] {
    return this.history.get(pool) ?? [];
  }

  add(a: Addition): void {
    this.pending.push(a);
    this.all.push(a);
  }

  /** Additions to `pool` seen after revision `rv` (of any kind, within the desire or not). */
  additionsAfter(pool: string, rv: number): Addition[] {
    return this.all.filter((a) => a.pool === pool && a.rv > rv);
  }

  /**
   * The creates of `pool` around the first drop of its desire below `peak` after revision `from`
   * (a scale taken back, a pause, a deletion): those after `from` up to the drop, and those after
   * it until the desire rises above `after` again. `dropRv` is +∞ when no drop was seen.
   */
  createsAroundDrop(
    pool: string,
    from: number,
    peak: number,
    after: number,
  ): { readonly dropRv: number; readonly before: number; readonly after: number } {
    const h = this.historyOf(pool);
    const drop = h.findIndex((d) => d.rv > from && d.replicas < peak);
    const dropRv = h[drop]?.rv ?? Number.POSITIVE_INFINITY;
    const endRv = h.slice(drop + 1).find((d) => d.replicas > after)?.rv ?? Number.POSITIVE_INFINITY;
    const adds = this.additionsAfter(pool, from).filter((a) => a.kind === 'create');
    return {
      dropRv,
      before: adds.filter((a) => a.rv <= dropRv).length,
      after: adds.filter((a) => a.rv > dropRv && a.rv < endRv).length,
    };
  }

  /**
   * Judges every addition at a revision up to `complete` (the pool history is known complete up to
   * there); returns the violations.
   */
  check(complete: number): string[] {
    const out: string[] = [];
    const later: Addition[] = [];
    for (const a of this.pending) {
      if (a.rv > complete) later.push(a);
      else {
        const v = this.judge(a);
        if (v !== undefined) out.push(v);
      }
    }
    this.pending.splice(0, this.pending.length, ...later);
    return out;
  }

  private judge(a: Addition): string | undefined {
    const h = this.history.get(a.pool) ?? [];
    let at = -1;
    for (let i = 0; i < h.length && h[i]!.rv <= a.rv; i++) at = i;
    // A pool never seen (a foreign VM carrying a pool's label) has no desire to judge by.
    if (at < 0) return undefined;
    this.checked++;
    const d = h[at]!;
    const dim: Dimension =
      d.standby !== undefined && (a.kind === 'standby' || a.kind === 'return')
        ? 'standby'
        : 'replicas';
    const have = dim === 'standby' || d.standby !== undefined ? a.replicas : a.replicas + a.spares;
    const count = dim === 'standby' ? a.spares : have;
    const want = (dim === 'standby' ? d.standby : d.replicas) ?? 0;
    if (count <= want) return undefined;
    const what = `${a.pool}: ${dim} ${count} after ${a.kind} ${a.name} at rv ${a.rv}, desire ${want} since rv ${d.rv}`;
    // The latest drop of this dimension at or before the addition.
    let drop = -1;
    for (let i = at; i > 0 && drop < 0; i--) {
      const before = (dim === 'standby' ? h[i - 1]!.standby : h[i - 1]!.replicas) ?? 0;
      const after = (dim === 'standby' ? h[i]!.standby : h[i]!.replicas) ?? 0;
      if (after < before) drop = i;
    }
    // A promotion or return a pass decided before the drop is part of its burst, as a create is.
    if (drop < 0) return `L1 at each instant: ${what}`;
    const key = `${a.pool}/${dim}/${h[drop]!.rv}`;
    const n = (this.spent.get(key) ?? 0) + 1;
    this.spent.set(key, n);
    if (n > this.burst)
      return `L1 burst: ${what}: create ${n} above the desire after its drop at rv ${h[drop]!.rv}, burst ${this.burst}`;
    this.graced++;
    return undefined;
  }
}
