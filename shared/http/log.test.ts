import { describe, expect, it } from 'vitest';
import { keys, malformedOf } from '../api/index.js';
import { createLogger, eventLogger, logMalformed, prettyLine } from './log.js';

function collector() {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(s) };
}

describe('createLogger', () => {
  it('writes JSON lines with the name, and child loggers carry event id, type and pool', () => {
    const out = collector();
    const log = createLogger('reconcile-pool', { destination: out, pretty: false, level: 'info' });
    eventLogger(log, { id: 'e1', type: 'dev.knative.apiserver.ref.update' }, 'ns/p1').info('hello');
    const rec = JSON.parse(out.lines[0]!) as Record<string, unknown>;
    expect(rec).toMatchObject({
      name: 'reconcile-pool',
      msg: 'hello',
      level: 30,
      eventId: 'e1',
      eventType: 'dev.knative.apiserver.ref.update',
      pool: 'ns/p1',
    });
  });

  it('never writes tokens or authorization headers', () => {
    const out = collector();
    const log = createLogger('x', { destination: out, pretty: false });
    log.info(
      { token: 's3cret', headers: { authorization: 'Bearer s3cret' }, user: { password: 'p' } },
      'm',
    );
    expect(out.lines.join('')).not.toContain('s3cret');
    expect(out.lines.join('')).not.toContain('"p"');
  });

  it('pretty mode prints readable lines', () => {
    const out = collector();
    createLogger('fn', { destination: out, pretty: true }).warn({ pool: 'ns/p' }, 'slow');
    expect(out.lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} WARN {2}fn: slow pool=ns\/p\n$/);
  });

  it('prettyLine passes non-JSON through', () => {
    expect(prettyLine('plain')).toBe('plain');
  });
});

describe('logMalformed', () => {
  it('names the skipped object, its uid, the pool it claims and the first issue, as a warning', () => {
    const out = collector();
    const log = createLogger('disk-gc-tick', { destination: out, pretty: false });
    const raw = {
      metadata: { name: 'v1', namespace: 'ci', uid: 'u1', labels: { [keys.poolUid]: 'p1' } },
    };
    logMalformed(log, malformedOf('VirtualMachine', raw, 'spec.runPolicy: Invalid option'));
    const rec = JSON.parse(out.lines[0]!) as Record<string, unknown>;
    expect(rec).toMatchObject({
      level: 40,
      object: 'VirtualMachine ci/v1',
      uid: 'u1',
      poolUid: 'p1',
      issue: 'spec.runPolicy: Invalid option',
    });
    expect(rec.msg).toContain('does not parse (spec.runPolicy: Invalid option)');
  });
});
