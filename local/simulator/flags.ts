/**
 * The simulator's command-line flags (`npm start -- --simulate-platform …`): time and failure, so
 * warm standby, self-healing and rollouts can be seen at the pace of a real platform.
 * @module
 */
import type { SimulatorOptions } from './simulator.js';

/** `node:util` parseArgs options of the simulator. */
export const simulatorFlags = {
  'provisioning-seconds': { type: 'string' },
  'boot-seconds': { type: 'string' },
  'never-start-label': { type: 'string' },
  'never-start-rate': { type: 'string' },
} as const;

/** Usage text of the simulator's flags. */
export const SIMULATOR_USAGE =
  '[--provisioning-seconds S] [--boot-seconds S] [--never-start-label KEY[=VALUE]] [--never-start-rate R]';

type Values = Partial<Record<keyof typeof simulatorFlags, string>>;

/** A finite number ≥ 0 from a flag, or a clear error. */
function seconds(name: string, text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new Error(`--${name} wants a number of seconds ≥ 0, got "${text}"`);
  return n;
}

/** Simulator options from parsed flags (unset flags keep the simulator's defaults). */
export function simulatorOptions(values: Values): Pick<SimulatorOptions, 'delays' | 'neverStart'> {
  const delays: NonNullable<SimulatorOptions['delays']> = {};
  const provisioning = values['provisioning-seconds'];
  const boot = values['boot-seconds'];
  if (provisioning !== undefined)
    delays.diskReady = 1000 * seconds('provisioning-seconds', provisioning);
  if (boot !== undefined) delays.vmStarting = 1000 * seconds('boot-seconds', boot);
  const label = values['never-start-label'];
  const rateText = values['never-start-rate'];
  const rate = rateText === undefined ? undefined : seconds('never-start-rate', rateText);
  if (rate !== undefined && rate > 1)
    throw new Error(`--never-start-rate wants a share from 0 to 1, got "${String(rateText)}"`);
  const neverStart = {
    ...(label === undefined ? {} : { label }),
    ...(rate === undefined ? {} : { rate }),
  };
  return {
    delays,
    ...(Object.keys(neverStart).length === 0 ? {} : { neverStart }),
  };
}
