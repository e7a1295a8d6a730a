/**
 * Which aggregated group serves vmpool's `scaledownwith` in this cluster: vmpool's own group where
 * the virtualization platform serves the default one, otherwise the default one.
 * @module
 */
import { OWN_SUBRESOURCES_GROUP, SUBRESOURCES_GROUP, VERSION } from '../shared/api/index.js';
import type { Ctx } from './context.js';
import { CliError, must } from './context.js';

/** The subresources a group must list to be vmpool's. */
const SCALE_DOWN_WITH = 'virtualmachinepools/scaledownwith';

/** The group to call, found by discovery (vmpool's own group first). */
export async function scaleDownWithGroup(ctx: Ctx): Promise<string> {
  const list = must(await ctx.raw.request('GET', '/apis')) as {
    groups?: Array<{ name?: string }>;
  };
  const served = new Set((list.groups ?? []).map((g) => g.name));
  for (const group of [OWN_SUBRESOURCES_GROUP, SUBRESOURCES_GROUP]) {
    if (!served.has(group)) continue;
    const res = await ctx.raw.request('GET', `/apis/${group}/${VERSION}`);
    const names = res.ok
      ? ((res.value as { resources?: Array<{ name?: string }> }).resources ?? []).map((r) => r.name)
      : [];
    if (names.includes(SCALE_DOWN_WITH)) return group;
  }
  throw new CliError(
    `error: no API group of this cluster serves ${SCALE_DOWN_WITH} (looked for ${OWN_SUBRESOURCES_GROUP} and ${SUBRESOURCES_GROUP}): is vmpool's scale-down-with installed and its APIService Available?`,
  );
}

/** The path of a pool's subresource under the group. */
export function poolPath(group: string, namespace: string, pool: string, sub: string): string {
  const ns = encodeURIComponent(namespace);
  return `/apis/${group}/${VERSION}/namespaces/${ns}/virtualmachinepools/${encodeURIComponent(pool)}/${sub}`;
}
