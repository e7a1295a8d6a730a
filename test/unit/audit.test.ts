import { describe, expect, it } from 'vitest';
import { judgeAudit } from '../../scripts/audit.js';

const report = (counts: Record<string, number>, vulns: Record<string, object> = {}) =>
  JSON.stringify({
    auditReportVersion: 2,
    vulnerabilities: vulns,
    metadata: {
      vulnerabilities: { info: 0, low: 0, moderate: 0, high: 0, critical: 0, ...counts },
    },
  });

describe('the CI audit of production dependencies', () => {
  it('passes a clean report and says so', () => {
    expect(judgeAudit(report({}))).toEqual({
      verdict: 'pass',
      message: 'no advisory at moderate or above (info 0, low 0, moderate 0, high 0, critical 0)',
    });
  });

  it('fails on an advisory at the level or above, naming the package', () => {
    const v = judgeAudit(report({ high: 1 }, { hono: { severity: 'high', via: [] } }));
    expect(v.verdict).toBe('fail');
    expect(v.message).toContain('hono (high)');
  });

  it('lets a low advisory through at the default level, not at level low', () => {
    const r = report({ low: 1 }, { pino: { severity: 'low' } });
    expect(judgeAudit(r).verdict).toBe('pass');
    expect(judgeAudit(r, 'low').verdict).toBe('fail');
  });

  it.each([
    'request to https://registry.npmjs.org/-/npm/v1/security/advisories/bulk failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org',
    '405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk',
  ])('an unreachable advisory endpoint is a loud skip, never a pass: %s', (message) => {
    const v = judgeAudit(JSON.stringify({ message, error: { summary: '', detail: '' } }));
    expect(v.verdict).toBe('skipped');
    expect(v.message).toMatch(/^SKIPPED: .* production dependencies were NOT audited$/);
  });

  it('fails on output it does not understand', () => {
    expect(judgeAudit('npm ERR! something').verdict).toBe('fail');
    expect(judgeAudit('{}').verdict).toBe('fail');
  });
});
