import { describe, expect, it } from 'vitest';
import { createFunctionMetrics, createRegistry, escapeLabelValue } from './metrics.js';

describe('registry', () => {
  it('renders counters with HELP/TYPE and escaped labels', () => {
    const r = createRegistry();
    const c = r.counter('vmpool_things_total', 'Things.\nSecond line', ['kind']);
    c.inc({ kind: 'a' });
    c.inc({ kind: 'a' }, 2);
    c.inc({ kind: 'we"ird\\\n' });
    expect(c.get({ kind: 'a' })).toBe(3);
    expect(r.render()).toBe(
      [
        '# HELP vmpool_things_total Things.\\nSecond line',
        '# TYPE vmpool_things_total counter',
        'vmpool_things_total{kind="a"} 3',
        'vmpool_things_total{kind="we\\"ird\\\\\\n"} 1',
        '',
      ].join('\n'),
    );
  });

  it('renders cumulative histogram buckets, +Inf, sum and count', () => {
    const r = createRegistry();
    const h = r.histogram('d_seconds', 'D.', ['verb'], [0.1, 1]);
    h.observe({ verb: 'get' }, 0.05);
    h.observe({ verb: 'get' }, 0.5);
    h.observe({ verb: 'get' }, 3);
    expect(r.render().split('\n')).toEqual([
      '# HELP d_seconds D.',
      '# TYPE d_seconds histogram',
      'd_seconds_bucket{verb="get",le="0.1"} 1',
      'd_seconds_bucket{verb="get",le="1"} 2',
      'd_seconds_bucket{verb="get",le="+Inf"} 3',
      'd_seconds_sum{verb="get"} 3.55',
      'd_seconds_count{verb="get"} 3',
      '',
    ]);
  });

  it('timers observe elapsed seconds', () => {
    const r = createRegistry();
    const h = r.histogram('t_seconds', 'T.', []);
    const s = h.startTimer({})();
    expect(s).toBeGreaterThanOrEqual(0);
    expect(r.render()).toContain('t_seconds_count 1');
  });

  it('refuses bad names, duplicate metrics and negative increments', () => {
    const r = createRegistry();
    expect(() => r.counter('bad-name', 'x', [])).toThrow();
    expect(() => r.counter('ok', 'x', ['le'])).toThrow();
    r.counter('dup', 'x', []);
    expect(() => r.counter('dup', 'x', [])).toThrow();
    expect(() => {
      r.counter('neg', 'x', []).inc({}, -1);
    }).toThrow();
  });

  it('escapeLabelValue', () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
  });
});

describe('function metrics', () => {
  it('registers the vmpool metrics and takes API requests from the Kube hook', () => {
    const m = createFunctionMetrics();
    m.onApiRequest('get', 'ok', 0.01);
    m.onApiRequest('get', 'ok', 0.02);
    m.reconciles.inc({ function: 'reconcile-pool', outcome: 'ok' });
    m.actions.inc({ kind: 'createVm', outcome: 'ok' });
    const text = m.registry.render();
    expect(text).toContain('vmpool_api_requests_total{verb="get",outcome="ok"} 2');
    expect(text).toContain('vmpool_api_request_duration_seconds_count{verb="get"} 2');
    expect(text).toContain('vmpool_reconciles_total{function="reconcile-pool",outcome="ok"} 1');
    expect(text).toContain('vmpool_actions_total{kind="createVm",outcome="ok"} 1');
    expect(text).toContain('# TYPE vmpool_request_duration_seconds histogram');
  });
});
