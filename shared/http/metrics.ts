/**
 * A minimal Prometheus registry (counters, gauges and histograms with labels) rendered in the text
 * exposition format 0.0.4, so no metrics dependency is bundled into every function.
 * @module
 */

import { escapeHelp, formatNumber, labelText } from './exposition.js';
import type { ClaimMetrics } from './claim-metrics.js';
import { createClaimMetrics } from './claim-metrics.js';

export { escapeLabelValue } from './exposition.js';

/** `Content-Type` of the text exposition format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels<L extends string> = Readonly<Record<L, string>>;

/** A monotonically increasing count per label set. */
export interface Counter<L extends string> {
  inc(labels: Labels<L>, by?: number): void;
  get(labels: Labels<L>): number;
}

/** A value per label set that goes up and down (claims by phase, idle members). */
export interface Gauge<L extends string> {
  set(labels: Labels<L>, value: number): void;
  get(labels: Labels<L>): number;
  /** Drops the series of `labels` (its object is gone), so it is no longer rendered. */
  remove(labels: Labels<L>): void;
}

/** A distribution of observed values (seconds, usually) per label set. */
export interface Histogram<L extends string> {
  observe(labels: Labels<L>, value: number): void;
  /** Starts a timer; calling the result observes the elapsed seconds and returns them. */
  startTimer(labels: Labels<L>): () => number;
  /** Drops the series of `labels` (its object is gone), so it is no longer rendered. */
  remove(labels: Labels<L>): void;
}

/** Metrics of one process. */
export interface Registry {
  counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L>;
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L>;
  histogram<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets?: readonly number[],
  ): Histogram<L>;
  /** Every metric in the text exposition format. */
  render(): string;
}

/** Default buckets in seconds: 5 ms to 10 s. */
export const DEFAULT_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

interface Family {
  readonly name: string;
  render(): string[];
}

/** A new, empty registry. */
export function createRegistry(): Registry {
  const families = new Map<string, Family>();

  function register(name: string, labelNames: readonly string[], family: Family): void {
    if (!NAME.test(name)) throw new Error(`invalid metric name ${name}`);
    for (const l of labelNames) {
      if (!LABEL.test(l) || l.startsWith('__') || l === 'le') throw new Error(`invalid label ${l}`);
    }
    if (families.has(name)) throw new Error(`metric ${name} registered twice`);
    families.set(name, family);
  }

  /** Label values in declared order; the key of a series. */
  function valuesOf(labelNames: readonly string[], labels: Readonly<Record<string, string>>) {
    return labelNames.map((n) => labels[n] ?? '');
  }

  /** The key of the series of `labels`. */
  function keyOf(labelNames: readonly string[], labels: Readonly<Record<string, string>>) {
    return JSON.stringify(valuesOf(labelNames, labels));
  }

  /** One number per label set, rendered as `type`: a counter's or a gauge's store. */
  function scalar(
    type: 'counter' | 'gauge',
    name: string,
    help: string,
    labelNames: readonly string[],
  ) {
    const series = new Map<string, { values: string[]; count: number }>();
    register(name, labelNames, {
      name,
      render: () => [
        `# HELP ${name} ${escapeHelp(help)}`,
        `# TYPE ${name} ${type}`,
        ...[...series.values()].map(
          (s) => `${name}${labelText(labelNames, s.values)} ${formatNumber(s.count)}`,
        ),
      ],
    });
    const at = (labels: Readonly<Record<string, string>>) => {
      const values = valuesOf(labelNames, labels);
      const key = JSON.stringify(values);
      const s = series.get(key) ?? { values, count: 0 };
      series.set(key, s);
      return s;
    };
    const get = (labels: Readonly<Record<string, string>>): number =>
      series.get(keyOf(labelNames, labels))?.count ?? 0;
    const remove = (labels: Readonly<Record<string, string>>): void => {
      series.delete(keyOf(labelNames, labels));
    };
    return { at, get, remove };
  }

  return {
    counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
      const s = scalar('counter', name, help, labelNames);
      return {
        inc(labels, by = 1) {
          if (by < 0) throw new Error('a counter cannot decrease');
          s.at(labels).count += by;
        },
        get: s.get,
      };
    },

    gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L> {
      const s = scalar('gauge', name, help, labelNames);
      return {
        set(labels, value) {
          s.at(labels).count = value;
        },
        get: s.get,
        remove: s.remove,
      };
    },

    histogram<L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      buckets: readonly number[] = DEFAULT_BUCKETS,
    ): Histogram<L> {
      const bounds = [...buckets].sort((a, b) => a - b);
      const series = new Map<
        string,
        { values: string[]; counts: number[]; sum: number; count: number }
      >();
      register(name, labelNames, {
        name,
        render: () => {
          const lines = [`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} histogram`];
          for (const s of series.values()) {
            let cumulative = 0;
            bounds.forEach((b, i) => {
              cumulative += s.counts[i] ?? 0;
              lines.push(
                `${name}_bucket${labelText(labelNames, s.values, ['le', formatNumber(b)])} ${cumulative}`,
              );
            });
            lines.push(
              `${name}_bucket${labelText(labelNames, s.values, ['le', '+Inf'])} ${s.count}`,
            );
            lines.push(`${name}_sum${labelText(labelNames, s.values)} ${formatNumber(s.sum)}`);
            lines.push(`${name}_count${labelText(labelNames, s.values)} ${s.count}`);
          }
          return lines;
        },
      });
      const observe = (labels: Labels<L>, value: number) => {
        const values = valuesOf(labelNames, labels);
        const key = JSON.stringify(values);
        const s = series.get(key) ?? { values, counts: bounds.map(() => 0), sum: 0, count: 0 };
        const i = bounds.findIndex((b) => value <= b);
        if (i >= 0) s.counts[i] = (s.counts[i] ?? 0) + 1;
        s.sum += value;
        s.count += 1;
        series.set(key, s);
      };
      return {
        observe,
        startTimer(labels) {
          const start = performance.now();
          return () => {
            const seconds = (performance.now() - start) / 1000;
            observe(labels, seconds);
            return seconds;
          };
        },
        remove(labels) {
          series.delete(keyOf(labelNames, labels));
        },
      };
    },

    render() {
      return `${[...families.values()].flatMap((f) => f.render()).join('\n')}\n`;
    },
  };
}

/** The metrics every vmpool function exports. */
export interface FunctionMetrics {
  readonly registry: Registry;
  /** One per handled reconcile request, by function and outcome (ok, gone, ownWrite, conflict…). */
  readonly reconciles: Counter<'function' | 'outcome'>;
  /** Side effects executed, by kind (createVm, deleteDisk…) and outcome. */
  readonly actions: Counter<'kind' | 'outcome'>;
  /** API server requests, by verb and outcome; fed by {@link FunctionMetrics.onApiRequest}. */
  readonly apiRequests: Counter<'verb' | 'outcome'>;
  /** Latency of API server requests. */
  readonly apiRequestDuration: Histogram<'verb'>;
  /** Latency of the function's own HTTP requests. */
  readonly requestDuration: Histogram<'function' | 'method' | 'code'>;
  /** Claims by phase, idle members, claim-to-Bound latency. */
  readonly claims: ClaimMetrics;
  /** Pass as `onRequest` to createKube so API calls land in these metrics. */
  onApiRequest(verb: string, outcome: string, seconds: number): void;
}

/** Registers vmpool's standard metrics in a new (or the given) registry. */
export function createFunctionMetrics(registry: Registry = createRegistry()): FunctionMetrics {
  const apiRequests = registry.counter(
    'vmpool_api_requests_total',
    'Requests to the Kubernetes API server, retries included.',
    ['verb', 'outcome'],
  );
  const apiRequestDuration = registry.histogram(
    'vmpool_api_request_duration_seconds',
    'Latency of requests to the Kubernetes API server.',
    ['verb'],
  );
  return {
    registry,
    reconciles: registry.counter('vmpool_reconciles_total', 'Reconcile requests handled.', [
      'function',
      'outcome',
    ]),
    actions: registry.counter('vmpool_actions_total', 'Side effects executed.', [
      'kind',
      'outcome',
    ]),
    apiRequests,
    apiRequestDuration,
    requestDuration: registry.histogram(
      'vmpool_request_duration_seconds',
      'Latency of the HTTP requests this function served.',
      ['function', 'method', 'code'],
    ),
    claims: createClaimMetrics(registry),
    onApiRequest(verb, outcome, seconds) {
      apiRequests.inc({ verb, outcome });
      apiRequestDuration.observe({ verb }, seconds);
    },
  };
}
