/**
 * `kubectl vmpool`: everyday pool work from kubectl (a kubectl plugin: an executable named
 * `kubectl-vmpool` on PATH).
 *
 *   kubectl vmpool scale-down-with POOL VM [VM...] [--dry-run]
 *   kubectl vmpool claim POOL [--holder H] [--ttl 1h] [--on-release Delete|Recycle] [--wait [--timeout 5m]]
 *   kubectl vmpool release CLAIM [CLAIM...]
 *   kubectl vmpool status POOL
 *   kubectl vmpool victims POOL [--count N]
 *   kubectl vmpool version
 *
 * kubectl's own flags are honoured: --kubeconfig, --context, -n/--namespace, -o json|yaml.
 * @module
 */
import { parseArgs } from 'node:util';
import { VERSION_TEXT, scaleDownWith, victims } from './commands.js';
import { claim, release } from './claims.js';
import type { Formats } from './context.js';
import { CliError, contextOf } from './context.js';
import { status } from './status.js';

const USAGE = `Everyday work with VirtualMachinePools.

Usage:
  kubectl vmpool scale-down-with POOL VM [VM...] [--dry-run]   remove these replicas (atomically)
  kubectl vmpool claim POOL [--holder H] [--ttl 1h] [--on-release Delete|Recycle] [--wait [--timeout 5m]]
                                                               take an idle member (with --wait: print its name once bound)
  kubectl vmpool release CLAIM [CLAIM...]                      give claimed members back (the pool deletes or recycles them)
  kubectl vmpool status POOL                                   counts, conditions, members, claims, Events
  kubectl vmpool victims POOL [--count N]                      who a scale-down would remove next
  kubectl vmpool version

Flags: --kubeconfig FILE, --context NAME, -n/--namespace NS, -o/--output json|yaml (claim: also name; release: name)`;

/** The \`-o\` formats each command takes besides its own text. */
const FORMATS: Readonly<Record<string, Formats>> = {
  claim: ['json', 'name', 'yaml'],
  release: ['name'],
};

/** Runs one command line; resolves with the exit code. */
export async function run(
  argv: readonly string[],
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  // kubectl spells it --dry-run or --dry-run=server; both mean "change nothing".
  const args = argv.map((a) => (a.startsWith('--dry-run') ? '--dry-run' : a));
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        namespace: { type: 'string', short: 'n' },
        output: { type: 'string', short: 'o' },
        'dry-run': { type: 'boolean', default: false },
        count: { type: 'string', default: '1' },
        holder: { type: 'string' },
        ttl: { type: 'string' },
        'on-release': { type: 'string' },
        wait: { type: 'boolean', default: false },
        timeout: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    err(`error: ${(e as Error).message}`);
    return 1;
  }
  const {
    values: f,
    positionals: [command, pool, ...rest],
  } = parsed;
  if (f.help || command === undefined || command === 'help') {
    out(USAGE);
    return command === undefined && !f.help ? 1 : 0;
  }
  if (command === 'version') {
    out(VERSION_TEXT);
    return 0;
  }
  try {
    if (pool === undefined) {
      const what = command === 'release' ? 'a claim name' : 'a pool name';
      throw new CliError(`error: ${command} needs ${what}\n\n${USAGE}`);
    }
    const ctx = contextOf(
      {
        ...(f.kubeconfig === undefined ? {} : { kubeconfig: f.kubeconfig }),
        ...(f.context === undefined ? {} : { context: f.context }),
        ...(f.namespace === undefined ? {} : { namespace: f.namespace }),
        ...(f.output === undefined ? {} : { output: f.output }),
      },
      out,
      err,
      FORMATS[command],
    );
    if (command === 'scale-down-with') await scaleDownWith(ctx, pool, rest, f['dry-run']);
    else if (command === 'status') await status(ctx, pool, new Date());
    else if (command === 'victims') await victims(ctx, pool, Number(f.count));
    else if (command === 'claim')
      await claim(ctx, pool, {
        ...(f.holder === undefined ? {} : { holder: f.holder }),
        ...(f.ttl === undefined ? {} : { ttl: f.ttl }),
        ...(f['on-release'] === undefined ? {} : { onRelease: f['on-release'] }),
        ...(f.timeout === undefined ? {} : { timeout: f.timeout }),
        wait: f.wait,
      });
    else if (command === 'release') await release(ctx, [pool, ...rest]);
    else throw new CliError(`error: unknown command "${command}"\n\n${USAGE}`);
    return 0;
  } catch (e) {
    err(e instanceof CliError ? e.message : `error: ${(e as Error).message}`);
    return 1;
  }
}
