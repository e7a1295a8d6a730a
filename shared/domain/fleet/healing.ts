/**
 * The `Healing` condition: what self-healing is doing, and when replacements keep failing, what
 * fails and when the next round may start.
 * @module
 */
import type { Condition, HealingState } from '../../api/index.js';
import { keys } from '../../api/index.js';
import { rfc3339 } from '../formats/index.js';

/** What the condition says. */
export interface HealingFacts {
  /** `spec.healing.startupTimeout` as written. */
  readonly timeout: string;
  /** Live members judged unhealthy, and the protected ones among them (kept). */
  readonly unhealthy: number;
  readonly kept: number;
  /** The back-off state after this plan, and when its next round may start (ms). */
  readonly state?: HealingState;
  readonly next?: number;
  /** Set when the breaker is open: more members unhealthy than `spec.healing.maxUnhealthy` allows. */
  readonly tripped?: {
    /** `spec.replicas` plus `standby.replicas`, what a percentage is of. */
    readonly size: number;
    /** How many unhealthy members healing tolerates, and the setting it comes from. */
    readonly tolerated: number;
    readonly setting: string;
  };
}

/**
 * `Healing=False` with reason `TooManyUnhealthy` while the breaker is open (healing replaces
 * nothing), else `ReplacementsFailing` from the second replacement round of an unhealthy spell on (a
 * replacement did not reach Running either). Otherwise `True`: `Replacing` while members are
 * unhealthy, `Healthy` when none is. Stable while nothing changes, so a waiting pool writes nothing.
 */
export function healingCondition(f: HealingFacts): Condition {
  const kept =
    f.kept > 0
      ? ` ${String(f.kept)} protected unhealthy replicas are kept (annotation ${keys.protected}: "true").`
      : '';
  if (f.tripped !== undefined) {
    const { size, tolerated, setting } = f.tripped;
    return {
      type: 'Healing',
      status: 'False',
      reason: 'TooManyUnhealthy',
      message: `${String(f.unhealthy)} of ${String(size)} replicas are not Running within startupTimeout ${f.timeout}, more than spec.healing.maxUnhealthy ${setting} tolerates (${String(tolerated)}): vmpool replaces none of them, since so many failing at once points at a cause a replacement would hit too (the image, storage, network or the platform). Find it (kubectl describe vm on one of them, kubectl get events); healing resumes by itself once at most ${String(tolerated)} are unhealthy, or raise spec.healing.maxUnhealthy to have them replaced now.${kept}`,
    };
  }
  if (f.state !== undefined && f.state.rounds >= 2) {
    const next =
      f.next === undefined
        ? ''
        : ` The next round starts no earlier than ${rfc3339(new Date(f.next))}.`;
    return {
      type: 'Healing',
      status: 'False',
      reason: 'ReplacementsFailing',
      message: `Replacements keep failing: ${String(f.state.rounds)} rounds of replacements since the pool was last healthy have not brought every replica to Running within startupTimeout ${f.timeout}${f.unhealthy > 0 ? ` (${String(f.unhealthy)} unhealthy now)` : ''}; vmpool backs off exponentially.${next}${kept}`,
    };
  }
  if (f.unhealthy > 0)
    return {
      type: 'Healing',
      status: 'True',
      reason: 'Replacing',
      message: `${String(f.unhealthy)} replicas are not Running within startupTimeout ${f.timeout}; vmpool replaces them under fresh names.${kept}`,
    };
  return { type: 'Healing', status: 'True', reason: 'Healthy', message: '' };
}
