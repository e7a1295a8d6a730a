/**
 * The victims preview: the next members a scale-down would remove, in order and with the reason,
 * computed by the ranking the reconciler uses ({@link rankVictims}) on the same view, so the
 * preview cannot disagree with what happens.
 * @module
 */
import type { ScaleDownPolicy } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { recordedLeavers } from './count.js';
import {
  claimOf,
  isDraining,
  isKept,
  nameOf,
  scaleDownCandidates,
  isProtected,
  nodeOf,
  rankVictims,
} from '../fleet/index.js';
import type { Observed } from './observe.js';
import { observe } from './observe.js';
import { splitStandby } from './partition.js';
import type { RankReason, Ranked } from '../fleet/index.js';

/** One member a scale-down would take, in order. */
export interface VictimPreview {
  readonly name: string;
  /**
   * Why it comes before the next one; `Protected` or `Claimed`: the scale-down would wait for it
   * instead.
   */
  readonly reason: RankReason | 'Protected' | 'Claimed';
  readonly message: string;
  readonly protected: boolean;
  readonly deletionCost: number;
  readonly nodeName?: string;
  readonly creationTimestamp?: string;
}

/** A member already asked to leave (not part of the next scale-down). */
export interface LeavingPreview {
  readonly name: string;
  /** A scale-down chose it, or a scaledownwith named it. */
  readonly why: 'scaleDown' | 'target';
  /** Asked to drain (and since when); it is deleted once drained or timed out. */
  readonly draining: boolean;
  readonly drainRequested?: string;
}

/** The answer of the preview. */
export interface Preview {
  readonly policy: ScaleDownPolicy;
  /** How many victims were asked for (`victims` may be shorter: see `message`). */
  readonly count: number;
  /** In removal order; protected ones last, as those a scale-down would wait for. */
  readonly victims: readonly VictimPreview[];
  readonly leaving: readonly LeavingPreview[];
  /** Why fewer victims than asked, or why none (Explicit); empty otherwise. */
  readonly message: string;
}

/** The next `count` victims of a scale-down of the observed pool, and who already leaves. */
export function previewVictims(obs: Observed, count: number): Preview {
  // A scale-down takes replicas only; the standby shrinks by standby.replicas, not by this ranking.
  const view = splitStandby(observe(obs)).active;
  const policy = view.pool.spec.scaleDownPolicy;
  const recorded = recordedLeavers(view);
  const refs = [
    ...recorded.victims.map((r) => ({ ...r, why: 'scaleDown' as const })),
    ...recorded.targets.map((r) => ({ ...r, why: 'target' as const })),
  ];
  const leaving = refs.flatMap((r): LeavingPreview[] => {
    const vm = view.live.get(r.name);
    if (vm === undefined) return [];
    const at = vm.metadata.annotations?.[keys.drainRequested];
    return [
      { name: r.name, why: r.why, draining: isDraining(vm), ...(at ? { drainRequested: at } : {}) },
    ];
  });
  if (policy === 'Explicit')
    return {
      policy,
      count,
      victims: [],
      leaving,
      message:
        'scaleDownPolicy Explicit: a scale-down removes only the members scaledownwith names',
    };
  const { staying, candidates } = scaleDownCandidates(
    view.members,
    new Set(refs.map((r) => r.name)),
  );
  const chosen = rankVictims(candidates, policy, staying, count).map((r) => entry(r, policy));
  // Beyond the other members a scale-down waits: show which protected or claimed ones it waits for.
  const guarded = staying.filter(isKept);
  const waits = rankVictims(guarded, policy, staying, count - chosen.length).map(
    (r): VictimPreview => {
      const claim = claimOf(r.vm);
      return claim !== undefined && !isProtected(r.vm)
        ? {
            ...entry(r, policy),
            reason: 'Claimed',
            message: `claimed by ${claim.name}: the scale-down would wait for its release`,
          }
        : {
            ...entry(r, policy),
            reason: 'Protected',
            message: `protected (annotation ${keys.protected}: "true"): the scale-down would wait for it`,
          };
    },
  );
  const victims = [...chosen, ...waits];
  const short = count - victims.length;
  return {
    policy,
    count,
    victims,
    leaving,
    message: short > 0 ? `only ${victims.length} members could leave` : '',
  };
}

function entry(r: Ranked, policy: ScaleDownPolicy): VictimPreview {
  const node = nodeOf(r.vm);
  const created = r.vm.metadata.creationTimestamp;
  return {
    name: nameOf(r.vm),
    reason: r.reason,
    message: explain(r, policy),
    protected: isProtected(r.vm),
    deletionCost: r.cost,
    ...(node === undefined ? {} : { nodeName: node }),
    ...(created === undefined ? {} : { creationTimestamp: created }),
  };
}

function explain(r: Ranked, policy: ScaleDownPolicy): string {
  switch (r.reason) {
    case 'DeletionCost':
      return `lowest deletion cost left (${r.cost})`;
    case 'Spread':
      return r.crowd === Infinity
        ? 'not on a node yet'
        : `node ${nodeOf(r.vm) ?? ''} hosts the most staying members (${r.crowd})`;
    case 'Age':
      return policy === 'NewestFirst' ? 'newest left' : 'oldest left';
    case 'Name':
      return 'as old as the next one: the name breaks the tie';
    case 'OnlyCandidate':
      return 'the last unprotected member left';
  }
}
