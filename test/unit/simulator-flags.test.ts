import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { simulatorFlags, simulatorOptions } from '../../local/simulator/flags.js';

const parse = (args: string[]) =>
  simulatorOptions(parseArgs({ args, options: simulatorFlags, strict: true }).values);

describe('npm start simulator flags', () => {
  it('turn into delays and failures', () => {
    expect(
      parse([
        '--provisioning-seconds',
        '20',
        '--boot-seconds',
        '5',
        '--never-start-label',
        'sim/broken=yes',
        '--never-start-rate',
        '0.1',
      ]),
    ).toEqual({
      delays: { diskReady: 20_000, vmStarting: 5000 },
      neverStart: { label: 'sim/broken=yes', rate: 0.1 },
    });
    expect(parse([])).toEqual({ delays: {} });
  });

  it.each([
    ['--boot-seconds', 'soon'],
    ['--provisioning-seconds', '-1'],
    ['--never-start-rate', '2'],
  ])('%s %s is refused with a message', (flag, value) => {
    expect(() => parse([flag, value])).toThrow(flag.slice(2));
  });
});
