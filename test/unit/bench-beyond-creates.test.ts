/**
 * The scale-up row that says where reconcile-pool's CPU went besides its creates: the counters it
 * reads from a function's /metrics, and the arithmetic that charges its creates at the raw client's
 * CPU per object.
 */
import { describe, expect, it } from 'vitest';
import { beyondCreates } from '../../bench/scaleup.js';
import { counterBy, minus, reconcilesByOutcome, requestsByVerb } from '../../bench/ticks.js';

const PAGE = `# HELP vmpool_reconciles_total Reconcile requests handled.
# TYPE vmpool_reconciles_total counter
vmpool_reconciles_total{function="reconcile-pool",outcome="ownWrite"} 600
vmpool_reconciles_total{function="reconcile-pool",outcome="converged"} 404
vmpool_api_requests_total{verb="create",outcome="ok"} 2990
vmpool_api_requests_total{verb="create",outcome="conflict"} 10
vmpool_api_requests_total{verb="list",outcome="ok"} 24
vmpool_api_requests_total{preverb="get",verb="get",outcome="ok"} 12
`;

describe('counters of a function /metrics page', () => {
  it('sums a counter by one label over the others', () => {
    expect(requestsByVerb(PAGE)).toEqual({ create: 3000, list: 24, get: 12 });
    expect(reconcilesByOutcome(PAGE)).toEqual({ ownWrite: 600, converged: 404 });
  });

  it('reads the label named, not one whose name ends in it', () => {
    expect(counterBy('m{preverb="x",verb="y"} 3\n', 'm', 'verb')).toEqual({ y: 3 });
  });

  it('keeps only what grew between two pages', () => {
    expect(minus({ a: 5, b: 2, c: 1 }, { a: 3, b: 2 })).toEqual({ a: 2, c: 1 });
  });
});

describe('beyondCreates', () => {
  it("charges the creates at the raw client's CPU per object and spreads the rest over the events", () => {
    const line = beyondCreates({
      n: 1000,
      functionCpuMs: 1946,
      loopAloneCpuMs: 900, // 0.30 ms per object for 3,000 objects
      handled: {
        outcomes: { ownWrite: 600, converged: 404 },
        verbs: { create: 3000, list: 24, get: 12 },
      },
    });
    // 1946 - 3000 × 0.30 = 1046 ms over 1,004 events.
    expect(line).toBe(
      '1046 ms, 1.04 ms per event; 1004 events: ownWrite 600, converged 404; create 3000, list 24, get 12',
    );
  });

  it('names no rate when no event was handled', () => {
    const line = beyondCreates({
      n: 1,
      functionCpuMs: 10,
      loopAloneCpuMs: 3,
      handled: { outcomes: {}, verbs: {} },
    });
    expect(line).toBe('10 ms; 0 events: none; none');
  });
});
