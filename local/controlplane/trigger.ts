/**
 * The reconcile-pool Trigger's filters, for the places that run without a Broker: the local adapters
 * apply them with Knative's own filter code (adapter.ts), the benchmarks' stand-in Broker with
 * {@link filterResult}, which follows Knative's subscriptionsapi filters (eventing v0.49.2).
 * @module
 */
import { EVENTING_MANIFEST, manifestsOfKind } from './crds.js';

/** One filter expression of the CloudEvents Subscriptions API, as a Trigger spells it. */
export interface SubscriptionsFilter {
  readonly exact?: Readonly<Record<string, string>>;
  readonly prefix?: Readonly<Record<string, string>>;
  readonly suffix?: Readonly<Record<string, string>>;
  readonly all?: readonly SubscriptionsFilter[];
  readonly any?: readonly SubscriptionsFilter[];
  readonly not?: SubscriptionsFilter;
  readonly cesql?: string;
}

/** The Trigger that routes watch events to reconcile-pool (knative/base/eventing.yaml). */
export const WATCH_TRIGGER = 'reconcile-pool-watch';

/** The `spec.filters` of the Trigger `name` that knative/ deploys. */
export function shippedTriggerFilters(
  name: string,
  file = EVENTING_MANIFEST,
): SubscriptionsFilter[] {
  const trigger = manifestsOfKind('Trigger', file).find((o) => o.metadata.name === name);
  if (trigger === undefined) throw new Error(`no Trigger ${name} in ${file}`);
  const spec = trigger.spec as { filters?: SubscriptionsFilter[] } | undefined;
  return spec?.filters ?? [];
}

/** Knative's three outcomes: an expression that matched, did not, or said nothing. */
export type FilterResult = 'pass' | 'fail' | 'none';

type Attributes = (name: string) => string | undefined;

function matching(
  map: Readonly<Record<string, string>>,
  attr: Attributes,
  test: (value: string, want: string) => boolean,
): FilterResult {
  for (const [k, want] of Object.entries(map)) {
    const value = attr(k);
    if (value === undefined || !test(value, want)) return 'fail';
  }
  return 'pass';
}

const nonEmpty = (m: Readonly<Record<string, string>> | undefined): m is Record<string, string> =>
  m !== undefined && Object.keys(m).length > 0;

/** One expression; the first dialect set decides, in Knative's order. */
function evaluate(f: SubscriptionsFilter, attr: Attributes): FilterResult {
  if (nonEmpty(f.exact)) return matching(f.exact, attr, (v, w) => v === w);
  if (nonEmpty(f.prefix)) return matching(f.prefix, attr, (v, w) => v.startsWith(w));
  if (nonEmpty(f.suffix)) return matching(f.suffix, attr, (v, w) => v.endsWith(w));
  if (f.all !== undefined && f.all.length > 0) return all(f.all, attr);
  if (f.any !== undefined && f.any.length > 0) {
    let res: FilterResult = 'none';
    for (const g of f.any) {
      res = evaluate(g, attr);
      if (res === 'pass') return 'pass';
    }
    return res;
  }
  if (f.not !== undefined) {
    const inner = evaluate(f.not, attr);
    return inner === 'pass' ? 'fail' : inner === 'fail' ? 'pass' : 'none';
  }
  // A stand-in that guessed at CESQL would drop or pass events Knative does not.
  if (f.cesql !== undefined && f.cesql !== '') throw new Error('CESQL filters are not supported');
  return 'none';
}

function all(filters: readonly SubscriptionsFilter[], attr: Attributes): FilterResult {
  let res: FilterResult = 'none';
  for (const g of filters) {
    res = evaluate(g, attr);
    if (res === 'fail') return 'fail';
  }
  return res;
}

/**
 * What a Trigger's `filters` (all of them must hold) make of an event with these context attributes.
 * Only `fail` drops the event.
 */
export function filterResult(
  filters: readonly SubscriptionsFilter[],
  attributes: Attributes,
): FilterResult {
  return all(filters, attributes);
}
