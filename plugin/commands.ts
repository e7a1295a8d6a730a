/**
 * `kubectl vmpool scale-down-with`, `victims` and `version`.
 * @module
 */
import type { ScaleDownWithBody, Status } from '../shared/api/index.js';
import { VERSION } from '../shared/api/index.js';
import type { Preview } from '../shared/domain/index.js';
import type { Ctx } from './context.js';
import { CliError, must, printObject, table } from './context.js';
import { poolPath, scaleDownWithGroup } from './discover.js';

/** The plugin's version (the project's). */
export const VERSION_TEXT = 'kubectl-vmpool 0.1.0';

/** Removes the named replicas of a pool atomically and prints what happened to each. */
export async function scaleDownWith(
  ctx: Ctx,
  pool: string,
  targets: readonly string[],
  dryRun: boolean,
): Promise<void> {
  if (targets.length === 0) throw new CliError('error: name at least one VirtualMachine to remove');
  const group = await scaleDownWithGroup(ctx);
  const body: ScaleDownWithBody = {
    apiVersion: `${group}/${VERSION}`,
    kind: 'VirtualMachinePoolScaleDownWith',
    targets: [...targets],
    ...(dryRun ? { dryRun: ['All'] } : {}),
  };
  const path = poolPath(group, ctx.namespace, pool, 'scaledownwith');
  const answer = must(await ctx.raw.request('POST', path, body)) as Status;
  if (printObject(ctx, answer)) return;
  const causes = answer.details?.causes ?? [];
  for (const c of causes)
    ctx.out(`virtualmachine/${c.field} ${c.reason}${dryRun ? ' (dry run)' : ''}`);
  ctx.out(`virtualmachinepool/${pool}: ${answer.message}`);
}

/** The next `count` members a scale-down would remove, in order, and why. */
export async function victims(ctx: Ctx, pool: string, count: number): Promise<void> {
  if (!Number.isInteger(count) || count < 1 || count > 1000)
    throw new CliError('error: --count must be a whole number from 1 to 1000');
  const group = await scaleDownWithGroup(ctx);
  const path = `${poolPath(group, ctx.namespace, pool, 'victims')}?count=${String(count)}`;
  const answer = must(await ctx.raw.request('GET', path)) as Preview;
  if (printObject(ctx, answer)) return;
  const rows = answer.victims.map((v, i) => [
    String(i + 1),
    v.name,
    v.reason,
    String(v.deletionCost),
    v.nodeName ?? '<none>',
    v.protected ? 'yes' : 'no',
    v.message,
  ]);
  for (const line of table([['#', 'NAME', 'REASON', 'COST', 'NODE', 'PROTECTED', 'WHY'], ...rows]))
    ctx.out(line);
  for (const l of answer.leaving)
    ctx.out(`already leaving: ${l.name} (${l.why}${l.draining ? ', draining' : ''})`);
  if (answer.message !== '') ctx.out(answer.message);
}
