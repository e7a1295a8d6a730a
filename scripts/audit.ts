/**
 * The supply-chain check of CI: `npm audit --omit=dev` (the packages the bundles ship) against the
 * registry's advisory data. Fails on an advisory at or above `VMPOOL_AUDIT_LEVEL` (default
 * moderate); where the advisory endpoint cannot be reached (no network, a registry mirror without
 * it) it says so and that the check was skipped, never silently.
 * @module
 */
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';

/** Advisory severities, least to most severe. */
export const SEVERITIES = ['info', 'low', 'moderate', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** What the audit came to. */
export interface AuditVerdict {
  readonly verdict: 'pass' | 'fail' | 'skipped';
  readonly message: string;
}

interface Report {
  auditReportVersion?: number;
  vulnerabilities?: Record<string, { severity?: string; via?: unknown[] }>;
  metadata?: { vulnerabilities?: Partial<Record<Severity, number>> };
  message?: string;
  statusCode?: number;
}

/** Judges the JSON `npm audit --json` printed. */
export function judgeAudit(stdout: string, level: Severity = 'moderate'): AuditVerdict {
  let report: Report;
  try {
    report = JSON.parse(stdout) as Report;
  } catch {
    return { verdict: 'fail', message: `npm audit printed no JSON: ${stdout.slice(0, 200)}` };
  }
  const counts = report.metadata?.vulnerabilities;
  if (report.auditReportVersion !== undefined && counts !== undefined) {
    const at = SEVERITIES.indexOf(level);
    const over = SEVERITIES.filter((s, i) => i >= at && (counts[s] ?? 0) > 0);
    const summary = SEVERITIES.map((s) => `${s} ${String(counts[s] ?? 0)}`).join(', ');
    if (over.length === 0)
      return { verdict: 'pass', message: `no advisory at ${level} or above (${summary})` };
    const names = Object.entries(report.vulnerabilities ?? {})
      .filter(([, v]) => SEVERITIES.indexOf(v.severity as Severity) >= at)
      .map(([name, v]) => `${name} (${v.severity ?? '?'})`);
    return { verdict: 'fail', message: `advisories at ${level} or above: ${names.join(', ')}` };
  }
  // npm's own error report: the advisory endpoint could not be asked.
  if (typeof report.message === 'string')
    return {
      verdict: 'skipped',
      message: `SKIPPED: the registry's advisory data is not reachable from here (${report.message}); production dependencies were NOT audited`,
    };
  return { verdict: 'fail', message: `unexpected npm audit output: ${stdout.slice(0, 200)}` };
}

function main(): void {
  const level = (process.env.VMPOOL_AUDIT_LEVEL ?? 'moderate') as Severity;
  if (!SEVERITIES.includes(level)) throw new Error(`VMPOOL_AUDIT_LEVEL=${level} is not a severity`);
  const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  const { verdict, message } = judgeAudit(run.stdout, level);
  const line = `audit (production dependencies): ${verdict === 'skipped' ? '' : `${verdict}: `}${message}`;
  if (verdict === 'pass') console.log(line);
  else console.error(line);
  process.exitCode = verdict === 'fail' ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main();
